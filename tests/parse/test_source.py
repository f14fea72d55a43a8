"""The bytes of a plain file, read into one reused buffer: each chunk, copied as it comes (as the
stream does), gives back the file exactly, however the reads and chunks fall."""

from __future__ import annotations

import gzip
import random

import pytest

from traceview.parse import source as source_module
from traceview.parse.source import ByteSource


def _content(size: int) -> bytes:
    return random.Random(size).randbytes(size)


@pytest.mark.parametrize(
    ("read_size", "chunk_size", "size"),
    [(1000, 1000, 10_500), (4000, 1000, 10_000), (4000, 1000, 3999), (1000, 1000, 0)],
)
def test_plain_chunks_copied_as_they_come_are_the_file(
    tmp_path, monkeypatch, read_size, chunk_size, size
):
    monkeypatch.setattr(source_module, "READ_SIZE", read_size)
    monkeypatch.setattr(source_module, "CHUNK_SIZE", chunk_size)
    path = tmp_path / "t.json"
    path.write_bytes(_content(size))
    source = ByteSource(path)
    chunks = [bytes(c) for c in source.chunks()]
    assert b"".join(chunks) == path.read_bytes()
    assert all(0 < len(c) <= chunk_size for c in chunks)
    assert source.uncompressed_bytes == size


def test_chunks_from_the_middle_are_the_rest_of_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(source_module, "READ_SIZE", 1000)
    monkeypatch.setattr(source_module, "CHUNK_SIZE", 1000)
    path = tmp_path / "t.json"
    path.write_bytes(_content(9_321))
    chunks = [bytes(c) for c in ByteSource(path).chunks_from(2_345, 3_000)]
    assert len(chunks[0]) == 3_000 + 1_000 - 2_345  # to where a whole-file read cuts a chunk
    assert b"".join(chunks) == path.read_bytes()[2_345:]


def test_gzip_chunks_are_the_uncompressed_file(tmp_path, monkeypatch):
    monkeypatch.setattr(source_module, "READ_SIZE", 1000)
    monkeypatch.setattr(source_module, "CHUNK_SIZE", 1000)
    content = _content(20_000)
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(content))
    assert b"".join(bytes(c) for c in ByteSource(path).chunks()) == content
