"""Uploads held to the bounds a shared server can keep: size on the wire, size inflated, the
memory of the analysis."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest

pytest.importorskip("streamlit")

from tests import tracebuild as tb
from traceview.dashboard import upload
from traceview.errors import TraceviewError

SWEEP = Path(__file__).parents[2] / "sample_traces" / "cpu_sweep"


def test_expanded_bytes_counts_every_member_and_stops_past_the_cap():
    one, two = b"a" * 3_000_000, b"b" * 1_000
    members = gzip.compress(one) + gzip.compress(two)
    assert upload.expanded_bytes(members, cap=1 << 30) == len(one) + len(two)
    assert upload.expanded_bytes(one, cap=1) == len(one)  # not gzip: itself
    bomb = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    packed = bomb.compress(b" " * (64 << 20)) + bomb.flush()  # 64 MB in ~64 KB
    assert len(packed) < 100_000
    counted = upload.expanded_bytes(packed, cap=8 << 20)
    assert 8 << 20 < counted <= (8 << 20) + (1 << 20)  # stopped one step past the cap


def test_an_upload_inflating_past_the_cap_is_refused_before_it_is_read(monkeypatch):
    monkeypatch.setattr(upload, "MAX_EXPANDED_MB", 1)
    event = json.dumps(tb.cpu_op("a", 1, 1)).encode()
    text = b'{"traceEvents": [' + b", ".join([event] * 40_000) + b"]}"  # ~3 MB
    with pytest.raises(TraceviewError, match="inflates to more than 1 MB"):
        upload.load_upload("t.json.gz", lambda: gzip.compress(text))


def test_an_upload_is_analysed_under_the_memory_bound(monkeypatch):
    monkeypatch.setattr(upload, "MAX_MEMORY_MB", 1)  # 4,096 events
    trace = (SWEEP / "ddp-dp2" / "rank0.pt.trace.json.gz").read_bytes()
    with pytest.raises(TraceviewError, match="memory bound of 1 MB"):
        upload.load_upload("rank0.pt.trace.json.gz", lambda: trace)
    monkeypatch.setattr(upload, "MAX_MEMORY_MB", 2048)
    job = upload.load_upload("rank0.pt.trace.json.gz", lambda: trace)
    assert job.ranks[0].rank == 0


def test_an_upload_is_named_by_its_own_name_never_by_the_servers_path():
    with pytest.raises(TraceviewError) as e:
        upload.load_upload("mine.json", lambda: b'{"traceEvents": [{"ph": "X", "ts": 1}, {]}')
    assert e.value.message.startswith("mine.json: invalid JSON at byte")
    cut = gzip.decompress((SWEEP / "ddp-dp2" / "rank1.pt.trace.json.gz").read_bytes())
    job = upload.load_upload("cut.json", lambda: cut[: len(cut) * 3 // 4])
    (rank,) = job.ranks
    assert rank.trace == Path("cut.json")
    said = [n.message for n in rank.notes]
    assert any("cut short" in m for m in said) and not any("/tmp" in m for m in said)
