"""made_ahead: items made on a thread of their own, a few ahead of the reader — in order, what the
thread raises raised in its place, nothing made past a held item until the reader asks, and no
thread left behind by a reader that stops early or a trace read whole."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from traceview.parse import read_trace
from traceview.parse import source as source_module
from traceview.parse.ahead import made_ahead

FIXTURES = Path(__file__).parents[1] / "fixtures/traces"


def _threads(name: str) -> int:
    return sum(t.name == name for t in threading.enumerate())


def _recorded(count: int, made: list[int]) -> Iterator[int]:
    """0 .. count-1, each noted in `made` as it is made."""
    for i in range(count):
        made.append(i)
        yield i


def test_items_come_in_order_and_an_error_in_its_place():
    def items():
        yield from range(5)
        raise ValueError("sixth")

    got = made_ahead(items(), 2, "test-ahead")
    assert [next(got) for _ in range(5)] == list(range(5))
    with pytest.raises(ValueError, match="sixth"):
        next(got)


def test_nothing_is_made_past_a_held_item_until_the_reader_asks():
    made: list[int] = []
    got = made_ahead(_recorded(6, made), 4, "test-ahead", hold=lambda i: i == 2)
    assert [next(got) for _ in range(3)] == [0, 1, 2]
    time.sleep(0.3)  # the thread would have made 3 by now, were it not held
    assert made == [0, 1, 2]
    assert next(got) == 3  # asked: it goes on
    assert list(got) == [4, 5] and made == list(range(6))


def test_a_reader_that_stops_early_stops_the_thread():
    got = made_ahead(iter(range(1000)), 2, "test-ahead")
    assert next(got) == 0
    assert _threads("test-ahead") == 1
    got.close()  # type: ignore[attr-defined]
    assert _threads("test-ahead") == 0


def test_a_reader_that_stops_at_a_held_item_stops_the_thread_at_once():
    # A trace read in two halves stops its first reader at the pause: it must not wait there
    # for the thread to notice (a poll of 0.1 s cost a 58 MB trace a fifth of its reading).
    made: list[int] = []
    took = 0.0
    for _ in range(10):
        made.clear()
        got = made_ahead(_recorded(6, made), 4, "test-ahead", hold=lambda i: i == 1)
        assert [next(got) for _ in range(2)] == [0, 1]
        time.sleep(0.01)  # the thread is held now
        start = time.perf_counter()
        got.close()  # type: ignore[attr-defined]
        took += time.perf_counter() - start
        assert made == [0, 1] and _threads("test-ahead") == 0
    assert took < 0.25  # ten polls of 0.1 s would take about 0.5 s


def test_a_reader_that_stops_with_the_queue_full_stops_the_thread():
    made: list[int] = []
    got = made_ahead(_recorded(100, made), 2, "test-ahead")
    assert next(got) == 0
    time.sleep(0.05)  # the queue fills: the thread waits to hand on the next
    got.close()  # type: ignore[attr-defined]
    assert _threads("test-ahead") == 0 and len(made) <= 5


@pytest.mark.parametrize("packed", [False, True])
def test_a_trace_read_whole_or_cut_short_leaves_no_scanning_thread(tmp_path, monkeypatch, packed):
    # Read in several chunks, as a plain file read in one is not scanned on a thread (below).
    monkeypatch.setattr(source_module, "CHUNK_SIZE", 1 << 20)
    monkeypatch.setattr(source_module, "READ_SIZE", 1 << 20)
    text = gzip.decompress((FIXTURES / "nccl_ddp_w2_rank0_step5.json.gz").read_bytes())
    for body in (text, text[: len(text) // 2]):  # whole, then cut inside an event
        path = tmp_path / ("t.json.gz" if packed else "t.json")
        path.write_bytes(gzip.compress(body) if packed else body)
        trace = read_trace(path)
        assert trace.events.height > 0 and trace.truncated == (body is not text)
        assert _threads("traceview-scan") == 0 and _threads("traceview-inflate") == 0


@pytest.mark.parametrize("chunk", [4 << 20, 1 << 20])
def test_a_plain_file_read_in_one_chunk_is_scanned_without_a_thread(tmp_path, monkeypatch, chunk):
    # One chunk is one batch: a thread would have nothing to scan while its table is made, and
    # only hand the batch over. A longer file (or any gzip) is scanned on a thread of its own.
    monkeypatch.setattr(source_module, "CHUNK_SIZE", chunk)
    monkeypatch.setattr(source_module, "READ_SIZE", chunk)
    path = tmp_path / "t.json"
    path.write_bytes(gzip.decompress((FIXTURES / "nccl_ddp_w2_rank0_step5.json.gz").read_bytes()))
    one_chunk = path.stat().st_size <= chunk
    read_on: set[str] = set()
    trace = read_trace(path, lambda done, size: read_on.add(threading.current_thread().name))
    assert trace.events.height > 0 and not trace.truncated
    assert read_on == ({threading.main_thread().name} if one_chunk else {"traceview-scan"})
    assert one_chunk == (chunk == 4 << 20)  # both ways are tested
