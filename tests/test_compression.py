"""gzip in and out, by ISA-L and by zlib (what a platform without ISA-L's wheel uses)."""

from __future__ import annotations

import gzip
import io
import zlib

import pytest

from traceview import compression

TEXT = b'{"traceEvents": [' + b'{"ph": "X", "name": "aten::mm"},' * 5000 + b"{}]}"


@pytest.mark.parametrize("deflating", [compression._deflating, gzip], ids=["default", "zlib"])
def test_what_is_written_is_gzip_any_reader_reads(monkeypatch, deflating):
    monkeypatch.setattr(compression, "_deflating", deflating)
    sink = io.BytesIO()
    with compression.gzip_writer(sink) as out:
        out.write(TEXT[:1000])
        out.write(TEXT[1000:])
    assert not sink.closed  # the stream is finished, the sink left to its owner
    assert gzip.decompress(sink.getvalue()) == TEXT
    assert len(sink.getvalue()) < len(TEXT) // 10


@pytest.mark.parametrize("inflating", [compression.inflating, zlib], ids=["default", "zlib"])
def test_either_inflater_reads_a_gzip_member_and_says_where_it_ends(inflating):
    packed = gzip.compress(TEXT) + b"after"
    inflater = inflating.decompressobj(16 + inflating.MAX_WBITS)
    assert inflater.decompress(packed) == TEXT
    assert inflater.eof and inflater.unused_data == b"after"
    with pytest.raises(compression.INFLATE_ERRORS):
        inflating.decompressobj(16 + inflating.MAX_WBITS).decompress(
            b"\x1f\x8b\x08\x00" + bytes(40)
        )


def test_isal_is_what_this_platform_uses():
    # CI's platform has the wheel: the faster path is the one measured and tested.
    assert compression.inflating.__name__ == "isal.isal_zlib"
