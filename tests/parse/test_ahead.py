"""made_ahead: items made on a thread of their own, a few ahead of the reader — in order, what the
thread raises raised in its place, and no thread left behind by a reader that stops early or a
trace read whole."""

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


def test_a_reader_that_stops_early_stops_the_thread():
    got = made_ahead(iter(range(1000)), 2, "test-ahead")
    assert next(got) == 0
    assert _threads("test-ahead") == 1
    got.close()  # type: ignore[attr-defined]
    assert _threads("test-ahead") == 0


def test_a_reader_that_stops_with_the_queue_full_stops_the_thread():
    made: list[int] = []
    got = made_ahead(_recorded(100, made), 2, "test-ahead")
    assert next(got) == 0
    time.sleep(0.05)  # the queue fills: the thread waits to hand on the next
    got.close()  # type: ignore[attr-defined]
    assert _threads("test-ahead") == 0 and len(made) <= 5


@pytest.mark.parametrize("packed", [False, True])
def test_a_trace_read_whole_or_cut_short_leaves_no_thread(tmp_path, monkeypatch, packed):
    # Read in several chunks: a gzipped one is inflated on a thread of its own.
    monkeypatch.setattr(source_module, "CHUNK_SIZE", 1 << 20)
    monkeypatch.setattr(source_module, "READ_SIZE", 1 << 20)
    text = gzip.decompress((FIXTURES / "nccl_ddp_w2_rank0_step5.json.gz").read_bytes())
    for body in (text, text[: len(text) // 2]):  # whole, then cut inside an event
        path = tmp_path / ("t.json.gz" if packed else "t.json")
        path.write_bytes(gzip.compress(body) if packed else body)
        trace = read_trace(path)
        assert trace.events.height > 0 and trace.truncated == (body is not text)
        assert _threads("traceview-inflate") == 0
