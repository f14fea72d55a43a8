"""The bytes of a plain file, read into one reused buffer or through a memory map: each chunk,
copied as it comes (as the stream does), gives back the file exactly, however the reads and
chunks fall; a mapped file cut short while it is read is a clear error, not a crash."""

from __future__ import annotations

import gzip
import json
import mmap
import os
import random
from pathlib import Path

import pytest

from traceview.parse import fast
from traceview.parse import source as source_module
from traceview.parse.ahead import made_ahead
from traceview.parse.source import ByteSource, Mapped
from traceview.parse.stream import EventStream, StreamError

compiled_only = pytest.mark.skipif(fast._scan is None, reason="the compiled part was not built")


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


def _ends(chunks) -> list[int]:
    ends, at = [], 0
    for c in chunks:
        at = c.end if isinstance(c, Mapped) else at + len(c)
        ends.append(at)
    return ends


@compiled_only
@pytest.mark.parametrize("size", [10_500, 4_000, 1])
def test_mapped_chunks_end_where_read_ones_do(tmp_path, monkeypatch, size):
    monkeypatch.setattr(source_module, "READ_SIZE", 1000)
    monkeypatch.setattr(source_module, "CHUNK_SIZE", 1000)
    path = tmp_path / "t.json"
    path.write_bytes(_content(size))
    mapped = ByteSource(path)
    chunks, pieces, at = [], [], 0
    for c in mapped.chunks(mapped=True):  # each valid while it is the latest
        assert isinstance(c, Mapped)
        chunks.append(c)
        pieces.append(bytes(c.view[at : c.end]))
        at = c.end
    assert _ends(chunks) == _ends(ByteSource(path).chunks())
    assert b"".join(pieces) == path.read_bytes()
    assert mapped.uncompressed_bytes == size
    if size > 345:
        from_middle = list(ByteSource(path).chunks_from(345, 0, mapped=True))
        read = _ends(ByteSource(path).chunks_from(345, 0))
        assert _ends(from_middle) == [345 + e for e in read]


def _trace(events: int) -> bytes:
    event = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "dur": 5}
    rows = [json.dumps({**event, "ts": 10 * i}) for i in range(events)]
    return ('{"traceEvents": [\n' + ",\n".join(rows) + "\n]}").encode()


@compiled_only
@pytest.mark.parametrize("compiled", [True, False])
def test_a_mapped_file_cut_short_while_read_is_an_error_not_a_crash(
    tmp_path, monkeypatch, compiled
):
    # Pages past the new end of a mapped file raise SIGBUS when touched; the scanner (and the
    # copy the pure-Python path reads) turn it into an error.
    monkeypatch.setattr(source_module, "CHUNK_SIZE", 64 << 10)
    path = tmp_path / "t.json"
    path.write_bytes(_trace(20_000))
    assert path.stat().st_size > 8 * (64 << 10)
    batches = EventStream(ByteSource(path).chunks(mapped=True), compiled=compiled).batches()
    next(batches)
    os.truncate(path, mmap.PAGESIZE)
    with pytest.raises(StreamError, match="could not be read: it was cut short"):
        list(batches)


@compiled_only
def test_a_guarded_copy_of_pages_past_the_end_raises(tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(b"x" * 4 * mmap.PAGESIZE)
    with path.open("rb") as f:
        mapping = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        view = memoryview(mapping)
        assert fast.copy(view[:10]) == b"x" * 10
        os.truncate(path, mmap.PAGESIZE)
        assert fast.copy(view[:10]) == b"x" * 10  # the page still in the file
        with pytest.raises(fast.UnreadablePage):
            fast.copy(view[2 * mmap.PAGESIZE :])
        view.release()
        mapping.close()


@compiled_only
@pytest.mark.skipif(not os.path.exists("/proc/version"), reason="Linux's /proc")
def test_a_file_that_cannot_be_mapped_is_read(monkeypatch):
    # /proc files say they are empty, so they cannot be mapped, yet they hold bytes.
    path = Path("/proc/version")
    chunks = list(ByteSource(path).chunks(mapped=True))
    assert not any(isinstance(c, Mapped) for c in chunks)
    assert b"".join(bytes(c) for c in chunks) == path.read_bytes()


def test_gzip_is_inflated_on_a_thread_of_its_own(tmp_path, monkeypatch):
    import threading

    monkeypatch.setattr(source_module, "READ_SIZE", 1000)
    monkeypatch.setattr(source_module, "CHUNK_SIZE", 1000)
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(_content(50_000)))
    # The reader stops after two chunks: the inflating thread is stopped with it, not left.
    before = threading.active_count()
    chunks = ByteSource(path).chunks()
    assert all(0 < len(next(chunks)) <= 1000 for _ in range(2))
    assert any(t.name == "traceview-inflate" for t in threading.enumerate())
    chunks.close()
    assert threading.active_count() == before
    # What the thread meets (corrupt data in the middle) is raised to the reader, in one line.
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 40] = bytes(40)
    path.write_bytes(bytes(data))
    with pytest.raises(Exception, match="corrupt gzip data"):
        b"".join(bytes(c) for c in ByteSource(path).chunks())
    assert threading.active_count() == before


def test_the_thread_hands_on_what_it_raises():
    def failing():
        yield b"a"
        raise ValueError("from the thread")

    got = made_ahead(failing(), 2, "test")
    assert next(got) == b"a"
    with pytest.raises(ValueError, match="from the thread"):
        next(got)
