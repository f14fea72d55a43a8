"""The compiled scanner and the pure-Python decoder read every trace to identical results."""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traceview.errors import TraceviewError
from traceview.parse import fast, read_trace
from traceview.parse import source as source_module
from traceview.parse.args import COLLECTIVE_ARGS, COMM_ARGS_SCHEMA
from traceview.parse.source import ByteSource
from traceview.parse.stream import EventStream

FIXTURES = Path(__file__).parents[1] / "fixtures/traces"
# Every real trace here, and a rank of the harness's GPU sweep (FSDP2 on CUDA, torch 2.11).
TRACES = [
    *sorted(p for p in FIXTURES.rglob("*.json*")),
    FIXTURES.parent / "gpu_sweep/zero3-dp1/rank0.pt.trace.json.gz",
]


def both_ways(path: Path):
    """read_trace by each path: its Trace, or the one-line error it gave."""
    out = []
    for pure in ("1", "0"):
        os.environ[fast.PURE_PYTHON_ENV] = pure
        try:
            out.append(read_trace(path))
        except TraceviewError as e:
            out.append(e.message)
    return out


def assert_same(a, b) -> None:
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    assert a.events.schema == b.events.schema
    assert a.events.equals(b.events)
    assert a.comm_args.schema == b.comm_args.schema
    assert a.comm_args.equals(b.comm_args)
    assert (a.thread_names, a.notes, a.meta, a.size_bytes, a.truncated) == (
        b.thread_names,
        b.notes,
        b.meta,
        b.size_bytes,
        b.truncated,
    )


def test_the_compiled_scanner_is_built():
    assert fast._scan is not None, "pip install -e . builds traceview/parse/_scan.c"


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_real_traces_read_the_same_both_ways(path, monkeypatch):
    assert_same(*both_ways(path))
    monkeypatch.setattr(source_module, "CHUNK_SIZE", 1 << 16)  # many batches, cut everywhere
    monkeypatch.setattr(source_module, "READ_SIZE", 1 << 16)
    assert_same(*both_ways(path))


def test_plain_batches_take_the_compiled_path(parser_path):
    stream = EventStream(ByteSource(FIXTURES / "nccl_ddp_w2_rank0_step5.json.gz").chunks())
    kinds = {type(batch).__name__ for batch in stream.batches()}
    if parser_path == "compiled":
        assert kinds == {"ScannedBatch"}  # the last event too: none goes the pure-Python way
    else:
        assert kinds == {"DecodedBatch"}


def _event(**fields) -> str:
    base = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10, "dur": 5}
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...})


_COMM = {
    "Collective name": "allreduce",
    "In msg nelems": "1024",
    "Out msg nelems": 1024,
    "dtype": "Float",
    "Process Group Ranks": "[0, 1]",
    "Seq": "0x10",
    "Input Dims": [[1024]],
}
# One event text each: plain ones, and every kind the scanner leaves to the decoder.
VARIANTS = [
    _event(),
    _event(ts=12.345, dur=0.5),
    _event(
        cat="kernel", name="ncclKernel_AllReduce", args={"correlation": 7, "device": 0, "stream": 7}
    ),
    _event(name="c10d::allreduce_", args=_COMM),
    _event(name="record_param_comms", args={**_COMM, "Group size": 2, "Collective name": 5}),
    _event(
        cat="kernel", args={"correlation": 18446744073709551615, "stream": "0x7", "device": "1"}
    ),
    _event(
        name="gloo:all_reduce", args={"Input Dims": [[7]], "Input type": ["float"], "Ev Idx": 3}
    ),
    # A call's args written with a key twice (the last counts), spaced, and with values the
    # decoder reads its own way (an integer beyond int64, null, a list written as a string).
    '{"ph": "X", "cat": "cpu_op", "name": "c10d::broadcast_", "ts": 1, "dur": 1, "args": '
    '{"Group size": 2, "Input Dims" :  [ [1, 2] ] , "Group size": 4, "Seq": 123456789012345678901234567890,'
    ' "dtype": null, "Process Group Ranks": "[0, 1, 2]", "In msg nelems": -0}}',
    # A kernel's launch shape, kept as written whatever the event's name: spaced, as a
    # string, null; and a key twice (the last counts).
    _event(cat="kernel", name="sgemm", args={"grid": [4, 106, 1], "block": [128, 1, 1]}),
    '{"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "ts": 1, "dur": 1, "args": '
    '{"grid" : [ 1,1, 1 ], "block": "[64, 1, 1]", "grid": [2, 1, 1], "stream": 7}}',
    _event(cat="kernel", name="sgemm", args={"grid": None, "block": [{"x": 1}]}),
    _event(pid="stream 7", tid=" 25738 "),
    _event(pid=7.0),
    _event(ts="12.5"),
    _event(ts=12.34567, dur=1.23456),
    _event(ts=12.0005, dur=0.0015),  # halves of a nanosecond, as float64 holds them
    '{"ph": "X", "cat": "cpu_op", "name": "x", "ts": 7.12345678901234567890123456789012345678901234567890123456789012345, "dur": 1}',
    _event(ts=1690000000123456.7891, dur=3.25),  # epoch-sized: read as decimals, cut
    _event(ts=1690000000123456.789, dur=1.23456),
    _event(ts=1.5e3),
    _event(ts=1690000000123456.789, dur=3.25),
    _event(ts=1690000000123456, dur=3),
    _event(ts=None),
    _event(ts=...),
    _event(dur=-1),
    _event(name='a"b\\n\u00e9\t'),
    _event(name="caf\u00e9 \u4e2d"),
    _event(name=None),
    _event(name=5),
    _event(cat=None),
    _event(args=None),
    _event(args=[1, 2]),
    _event(args={"correlation": True}),
    _event(  # keys as long as declared ones (device, stream: 6 bytes) and longer than any
        cat="kernel",
        args={"devicx": 3, "device": 1, "strean": 4, "stream": 9, "k" * 63: 1, "k" * 80: "", "": 2},
    ),
    _event(args={"x": {"y": [[[[{"z": [1, 2.5e10, None, True, "s"]}]]]]}}),
    _event(args={"name": 5}),
    _event(ph="Q"),
    _event(ph=...),
    _event(ph=7),
    _event(cat="python_function", name="<built-in method>"),
    _event(cat="Kernel", name="old_kernel"),
    json.dumps({"ph": "i", "name": 5, "ts": "x", "s": "t"}),
    json.dumps({"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}}),
    json.dumps({"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": 3}}),
    json.dumps({"ph": "f", "id": 1, "pid": 1, "tid": 2, "ts": 3, "bp": "e"}),
    '{"ph": "X", "cat": "cpu_op", "name": "x", "t\\u0073": 5, "dur": 1}',
    '{"ph": "X", "cat": "cpu_op", "name": "x", "ts": 1, "dur": 1, "args": {"x": "\\ud83d\\ude00"}}',
    '{"ph": "X", "cat": "cpu_op", "name": "bad\udcff", "ts": 1, "dur": 1}',  # not UTF-8
    '{"ph": "X", "cat": "cpu_op", "name": "x", "ts": 1, "dur": 1, "junk": "\udcfe"}',
    '{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"dtype": "\udcfe"}}',
    '{"ph": "X", "cat": "cpu_op", "name": "x", "ts": 01, "dur": 1}',
    '{"ph": "X", "cat": "cpu_op", "name": "x", "ts": NaN, "dur": 1}',
    '{"ph": "X" , "cat" : "cpu_op" ,"name":"spaced",\n\t"ts" : 2 , "dur" : 3 }',
    "[1, 2]",
    '"a string"',
]

# The ones that are valid JSON: a trace of these is read whole, not refused.
WELL_FORMED = [v for v in VARIANTS if "NaN" not in v and ": 01," not in v]


@settings(max_examples=150, deadline=None)
@given(
    events=st.lists(st.sampled_from(VARIANTS), min_size=1, max_size=40),
    chunk=st.sampled_from([64, 200, 1 << 12]),
    tail=st.sampled_from(["]}", '], "traceName": "x"}', "]", ""]),
)
def test_odd_events_read_the_same_both_ways(tmp_path_factory, events, chunk, tail):
    path = tmp_path_factory.mktemp("odd") / "t.json"
    text = '{"traceEvents": [' + ", ".join(events) + tail
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    saved = source_module.CHUNK_SIZE, source_module.READ_SIZE
    source_module.CHUNK_SIZE = source_module.READ_SIZE = chunk
    try:
        assert_same(*both_ways(path))
    finally:
        source_module.CHUNK_SIZE, source_module.READ_SIZE = saved


def test_a_trace_rewritten_with_four_decimals_stays_on_the_compiled_path(parser_path, tmp_path):
    # As a tool that loads a trace and writes it back with Python's json leaves it: times with
    # a fourth decimal. The compiled scanner reads them as the pure-Python path does (float64,
    # the fraction's nanoseconds rounded half to even), batch after batch, never falling back.
    doc = json.loads(gzip.decompress((FIXTURES / "gloo_cpu_w300_rank34.json.gz").read_bytes()))
    for i, event in enumerate(doc["traceEvents"]):
        for key in ("ts", "dur"):
            if isinstance(event.get(key), int | float):
                event[key] = round(event[key] + (i % 7) * 0.0001 + 0.00005, 4)
    path = tmp_path / "four.json"
    path.write_text(json.dumps(doc))
    assert re.search(r'"ts": \d+\.\d{4}[,}]', path.read_text())  # four decimals, as json writes

    stream = EventStream(ByteSource(path).chunks())
    kinds = [type(batch).__name__ for batch in stream.batches()]
    if parser_path == "compiled":
        assert stream.odd_batches == 0 and set(kinds) == {"ScannedBatch"}
    assert_same(*both_ways(path))


def test_call_arg_values_are_decoded_once_each_and_a_refused_one_leaves_its_batch_to_python():
    kept = fast.KeptValues()
    columns = [a.column for a in COLLECTIVE_ARGS]
    seq, dims = columns.index("seq"), columns.index("input_dims")
    learnt = [[] for _ in columns]
    learnt[seq], learnt[dims] = ["5", '"0x10"', "[1]"], ["[[2, 3]]"]
    kept.learn(tuple(learnt))
    rows = np.array([0, 2, 3])  # the batch's calls; row 1 is some other event
    triples = [[0, seq, 0], [0, dims, 0], [2, seq, 1], [1, seq, 2]]  # (row, slot, value id)
    positions = kept.positions(rows, np.array(triples, dtype=np.int64).tobytes())
    assert positions is not None
    frame = kept.frame(rows + 100, positions)
    assert frame.schema == COMM_ARGS_SCHEMA
    assert frame["row"].to_list() == [100, 102, 103]
    assert frame["seq"].to_list() == [5, 16, None]
    assert frame["input_dims"].to_list() == ["[[2, 3]]", None, None]
    refused = [*triples, [3, seq, 2]]  # a call holding the value the decoder refused
    assert kept.positions(rows, np.array(refused, dtype=np.int64).tobytes()) is None


def _trace_of_categories(path: Path, categories: list[str]) -> Path:
    events = [
        {"ph": "X", "name": f"op{i}", "cat": cat, "pid": 1, "tid": 1, "ts": 10 * i, "dur": 5}
        for i, cat in enumerate(categories)
    ]
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_categories_are_folded_right_in_any_order_and_many_are_not_kept(tmp_path, monkeypatch):
    """The compiled path folds a trace's categories once per order first met, for every trace
    of the process: traces meeting the same ones in other orders, or a category no other has,
    read as the pure-Python path reads them; a trace of many categories is folded without
    being kept."""
    known = ["kernel", "cpu_op", "Runtime", "user_annotation", "gpu_memcpy"]
    orders = [known, known[::-1], [*known[2:], "xpu_kernel", *known[:2]], known]
    many = [f"custom_{i}" for i in range(fast._FOLDS_KEPT_UP_TO + 8)] + known
    for i, categories in enumerate([*orders, many]):
        assert_same(*both_ways(_trace_of_categories(tmp_path / f"t{i}.json", categories)))
    kept = fast._kept_fold.cache_info().currsize
    assert_same(*both_ways(_trace_of_categories(tmp_path / "many.json", many[::-1])))
    assert fast._kept_fold.cache_info().currsize == kept
    folded = read_trace(tmp_path / "t2.json").events["cat"].to_list()
    assert folded == ["runtime", "user_annotation", "memcpy", "accelerator", "kernel", "cpu_op"]
