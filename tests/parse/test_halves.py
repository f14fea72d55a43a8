"""A large plain trace is read by two threads; the result is the one a single read gives, also
when the guessed cut falls inside a string or the halves would read timestamps differently."""

from __future__ import annotations

import gzip
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import tracebuild as tb
from tests.parse.test_fast_path import WELL_FORMED, assert_same
from traceview.parse import halves, read_trace
from traceview.parse import source as source_module

FIXTURES = Path(__file__).parents[1] / "fixtures/traces"
SMALL_CHUNK = 1 << 14


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(source_module, "CHUNK_SIZE", SMALL_CHUNK)
    monkeypatch.setattr(source_module, "READ_SIZE", SMALL_CHUNK)


def split_and_single(path: Path, monkeypatch) -> tuple[object, object, list[bool]]:
    """read_trace with the file cut in two (every size qualifies), then read alone; and what
    each pause decided."""
    joined: list[bool] = []
    real = halves.SecondHalf.joins

    def recording(self, next_start, precise):
        joined.append(real(self, next_start, precise))
        return joined[-1]

    monkeypatch.setattr(halves.SecondHalf, "joins", recording)
    monkeypatch.setattr(halves, "SPLIT_MIN_BYTES", 0)
    split = read_trace(path)
    monkeypatch.setattr(halves, "SPLIT_MIN_BYTES", 1 << 62)
    return split, read_trace(path), joined


@pytest.mark.parametrize(
    ("name", "halves_read"),
    [
        ("nccl_ddp_w2_rank0_step5.json.gz", [True]),
        # 25 KB, most of it the header: its middle lies inside the header, where no event is.
        ("gloo_cpu_w300_rank34.json.gz", []),
    ],
)
def test_two_halves_read_what_one_read_does(
    tmp_path, small_chunks, monkeypatch, parser_path, name, halves_read
):
    path = tmp_path / name.removesuffix(".gz")
    path.write_bytes(gzip.decompress((FIXTURES / name).read_bytes()))
    split, single, joined = split_and_single(path, monkeypatch)
    assert_same(split, single)
    # The compiled path reads the halves at once; the pure-Python one never splits.
    assert joined == (halves_read if parser_path == "compiled" else [])
    # The second half's reader is gone.
    assert "traceview-half" not in {t.name for t in threading.enumerate()}


def test_a_cut_guessed_inside_a_string_is_caught(tmp_path, small_chunks, monkeypatch, parser_path):
    # Every name looks like boundaries: the guess lands inside a string, and the first half,
    # paused there, sees its next event start elsewhere and reads on alone.
    events = [tb.cpu_op('x"}, {"y": 1}, {' * 40 + str(i), i, 1) for i in range(400)]
    path = tb.write(tmp_path / "t.json", tb.document(events))
    split, single, joined = split_and_single(path, monkeypatch)
    assert_same(split, single)
    assert split.events.height == 400
    assert joined == ([False] if parser_path == "compiled" else [])


@settings(max_examples=60, deadline=None)
@given(events=st.lists(st.sampled_from(WELL_FORMED), min_size=20, max_size=300))
def test_odd_events_read_the_same_in_halves(tmp_path_factory, events):
    path = tmp_path_factory.mktemp("halves") / "t.json"
    text = '{"traceEvents": [' + ", ".join(events) + '], "traceName": "t"}'
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    saved = source_module.CHUNK_SIZE, source_module.READ_SIZE, halves.SPLIT_MIN_BYTES
    source_module.CHUNK_SIZE = source_module.READ_SIZE = 1 << 10
    try:
        halves.SPLIT_MIN_BYTES = 0
        try:
            split = read_trace(path)
        except Exception as e:  # the one-line errors must match too
            split = str(e)
        halves.SPLIT_MIN_BYTES = 1 << 62
        try:
            single = read_trace(path)
        except Exception as e:
            single = str(e)
        assert_same(split, single)
    finally:
        source_module.CHUNK_SIZE, source_module.READ_SIZE, halves.SPLIT_MIN_BYTES = saved
