import polars as pl
import pytest

from tests import tracebuild as tb
from traceview.model import build_timeline
from traceview.parse import read_trace
from traceview.tables import INTERVALS_SCHEMA

US = 1000


def timeline(tmp_path, events, **doc):
    return build_timeline(read_trace(tb.write(tmp_path / "t.json", tb.document(events, **doc))))


def test_intervals_follow_the_schema(tmp_path):
    tl = timeline(tmp_path, tb.gpu_example())
    assert tl.intervals.schema == pl.Schema(INTERVALS_SCHEMA)


def test_gpu_kinds_lanes_steps_and_launches(tmp_path):
    iv = timeline(tmp_path, tb.gpu_example()).intervals
    rows = {r["ts_ns"] // US: r for r in iv.iter_rows(named=True)}
    assert rows[70]["kind"] == "comm" and rows[70]["lane"] == "stream 20"
    assert rows[70]["collective"] == "all_reduce"
    assert (rows[70]["bytes"], rows[70]["pg"], rows[70]["seq"]) == (4000, "0", 12)
    assert rows[170]["kind"] == "memory"
    assert rows[80]["kind"] == "compute" and rows[80]["step"] == 1  # launched at 20 µs
    assert rows[80]["launch_ns"] == 20 * US
    # Launched before the profiling window: in no step, though it runs inside step 1's span.
    assert rows[20]["step"] is None and rows[20]["launch_ns"] is None
    assert set(iv["rank"].to_list()) == {0}


def test_kernels_are_placed_by_start_only_when_no_launch_is_recorded(tmp_path):
    events = [tb.step(1, 0, 100), tb.step(2, 100, 100), tb.kernel("k", 150, 10, corr=1)]
    tl = timeline(tmp_path, events)
    assert tl.intervals["step"].to_list() == [2]
    assert any("no kernel's launch is recorded" in n.message for n in tl.notes)


def test_kernels_launched_before_the_window_are_noted(tmp_path):
    tl = timeline(tmp_path, tb.gpu_example())
    (note,) = [n for n in tl.notes if "before the profiling window" in n.message]
    assert note.message.startswith("1 kernels") and not note.lossy


def test_comm_pattern_adds_custom_communication_kernels(tmp_path):
    events = [tb.step(1, 0, 100), tb.launch(1, 1), tb.kernel("my_allreduce_kernel", 10, 5, 1)]
    path = tb.write(tmp_path / "t.json", tb.document(events))
    assert build_timeline(read_trace(path)).intervals["kind"].to_list() == ["compute"]
    custom = build_timeline(read_trace(path), comm_pattern="^my_allreduce")
    assert custom.intervals["kind"].to_list() == ["comm"]


def test_collective_of_a_kernel_comes_from_the_launching_cpu_call(tmp_path):
    # Older traces: the kernel has no collective args; the record_param_comms op and the
    # nccl:* span around its launch do.
    events = [
        tb.step(1, 0, 100),
        tb.cpu_op(
            "record_param_comms",
            10,
            20,
            **{
                "Collective name": "_reduce_scatter_base",
                "In msg nelems": 256,
                "Out msg nelems": 128,
                "dtype": "BFloat16",
            },
        ),
        tb.span("nccl:_reduce_scatter_base", 11, 15, tid=1),
        tb.launch(5, 12),
        tb.kernel("ncclKernel_ReduceScatter_RING_LL_Sum_bf16(ncclDevComm*)", 40, 10, 5),
    ]
    (row,) = timeline(tmp_path, events).intervals.iter_rows(named=True)
    assert row["collective"] == "reduce_scatter"
    assert row["bytes"] == 512  # max(256, 128) elements × 2 bytes


def test_cpu_trace_cuts_waits_and_calls_out_of_compute(tmp_path):
    tl = timeline(tmp_path, tb.cpu_example(), backend="gloo")
    assert tl.mode == "cpu"
    compute = tl.intervals.filter(pl.col("kind") == "compute").sort("ts_ns")
    spans = [(r["ts_ns"] // US, r["end_ns"] // US) for r in compute.iter_rows(named=True)]
    assert spans == [(5, 25), (30, 40), (45, 60), (62, 70), (85, 95)]
    assert "aten::addmm" not in compute["name"].cast(pl.String).to_list()  # nested
    comm = tl.intervals.filter(pl.col("kind") == "comm")
    assert comm["lane"].unique().to_list() == ["thread 2"]
    other = tl.intervals.filter(pl.col("kind") == "other")
    assert set(other["collective"].to_list()) == {"all_reduce", None}


def test_cpu_compute_is_each_threads_top_level_ops_in_any_order_and_on_tied_starts(tmp_path):
    # Written out of time order; on thread 1 two ops start together (the longer one holds
    # the other, whichever comes first) and one repeats another exactly (counted once); a
    # zero-length op outside every other stays a row of its own. Thread 3's ops are its own.
    events = [
        tb.step(1, 0, 200),
        tb.cpu_op("aten::mm", 50, 10),
        tb.cpu_op("aten::linear", 10, 30),
        tb.cpu_op("aten::t", 10, 5),  # same start as aten::linear, inside it
        tb.cpu_op("aten::addmm", 10, 30),  # aten::linear's twin
        tb.cpu_op("aten::add_", 47, 0),
        tb.cpu_op("aten::copy_", 35, 10),  # starts inside aten::linear, ends past it
        tb.cpu_op("aten::mul", 55, 3),  # inside aten::mm
        tb.cpu_op("aten::sum", 12, 50, tid=3),
        tb.cpu_op("aten::div", 20, 5, tid=3),
    ]
    tl = timeline(tmp_path, events)
    compute = tl.intervals.filter(pl.col("kind") == "compute").sort("lane", "ts_ns")
    assert [
        (r["lane"], r["name"], r["ts_ns"] // US, r["end_ns"] // US)
        for r in compute.iter_rows(named=True)
    ] == [
        ("thread 1", "aten::linear", 10, 40),
        ("thread 1", "aten::copy_", 35, 45),
        ("thread 1", "aten::add_", 47, 47),
        ("thread 1", "aten::mm", 50, 60),
        ("thread 3", "aten::sum", 12, 62),
    ]


def test_no_profiler_steps_gives_totals_only(tmp_path):
    events = [tb.launch(1, 1), tb.kernel("k", 10, 5, 1)]
    tl = timeline(tmp_path, events)
    assert tl.intervals["step"].to_list() == [None]
    assert any("no ProfilerStep" in n.message for n in tl.notes)


def test_waits_are_never_compute_even_as_annotations(tmp_path):
    events = [
        tb.thread_name(2, "thread 2 (pt_gloo_runloop)"),
        tb.step(1, 0, 100),
        tb.cpu_op("autograd::engine::evaluate_function: MmBackward0", 0, 50),
        tb.span("FSDP::post_backward_rs_wait (blocks.0)", 20, 10, tid=1),  # annotation: a cut
        tb.cpu_op("aten::copy_", 22, 3),  # inside the wait span
        tb.cpu_op("c10d::wait", 60, 10),
        tb.span("gloo:all_reduce", 10, 30, tid=2),
    ]
    tl = timeline(tmp_path, events, backend="gloo")
    compute = tl.intervals.filter(pl.col("kind") == "compute").sort("ts_ns")
    assert [(r["ts_ns"] // US, r["end_ns"] // US) for r in compute.iter_rows(named=True)] == [
        (0, 20),
        (30, 50),
    ]


def test_gloo_spans_take_the_collective_of_the_call_that_queued_them(tmp_path):
    # Gloo runs a reduce-scatter as gloo:all_reduce; the c10d call says what it really is.
    events = [
        tb.thread_name(2, "thread 2 (pt_gloo_runloop)"),
        tb.step(1, 0, 100),
        tb.cpu_op(
            "c10d::_reduce_scatter_base_",
            10,
            2,
            **{"Input Dims": [[50], [100], [], []], "Input type": ["float", "float", "", ""]},
        ),
        tb.cpu_op(
            "c10d::_allgather_base_",
            20,
            2,
            **{"Input Dims": [[100], [50], [], []], "Input type": ["float", "float", "", ""]},
        ),
        tb.span(
            "gloo:all_reduce", 13, 5, tid=2, **{"Input Dims": [[100]], "Input type": ["float"]}
        ),
        tb.span("gloo:all_gather", 23, 5, tid=2, **{"Input Dims": [[50]], "Input type": ["float"]}),
    ]
    comm = (
        timeline(tmp_path, events, backend="gloo")
        .intervals.filter(pl.col("kind") == "comm")
        .sort("ts_ns")
    )
    assert comm["collective"].to_list() == ["reduce_scatter", "all_gather"]
    assert comm["launch_ns"].to_list() == [10 * US, 20 * US]
    assert comm["bytes"].to_list() == [400, 400]  # the all-gather's full output


@pytest.mark.parametrize(
    ("span_dims", "paired"),
    [([[25]], True), ([[30]], False), ([[0]], False)],  # 100 B: 4 of 25; not of 30; of 0: none
)
def test_gloo_spans_are_paired_with_the_calls_only_where_each_fits_its_call(
    tmp_path, span_dims, paired
):
    events = [
        tb.thread_name(2, "thread 2 (pt_gloo_runloop)"),
        tb.step(1, 0, 100),
        tb.cpu_op("c10d::allreduce_", 10, 2, **{"Input Dims": [[25]], "Input type": ["float"]}),
        tb.cpu_op("c10d::allreduce_", 20, 2, **{"Input Dims": [[25]], "Input type": ["float"]}),
        tb.span("gloo:all_reduce", 13, 5, tid=2, **{"Input Dims": [[25]], "Input type": ["float"]}),
        tb.span(
            "gloo:all_reduce", 23, 5, tid=2, **{"Input Dims": span_dims, "Input type": ["float"]}
        ),
    ]
    comm = (
        timeline(tmp_path, events, backend="gloo")
        .intervals.filter(pl.col("kind") == "comm")
        .sort("ts_ns")
    )
    # Paired, both spans take their calls' launch times; else neither does (all or none).
    assert comm["launch_ns"].to_list() == ([10 * US, 20 * US] if paired else [None, None])


def test_comm_pattern_on_a_real_cpu_trace_moves_only_the_matching_spans():
    import gzip
    import json
    from pathlib import Path

    from traceview import analyze_trace
    from traceview.algebra import union

    path = Path(__file__).parents[2] / "sample_traces/cpu_sweep/ddp-dp2/rank0.pt.trace.json.gz"
    plain = analyze_trace(path).total
    custom = analyze_trace(path, comm_pattern="^aten::addcdiv_").total
    assert plain is not None and custom is not None
    assert (custom.start_ns, custom.end_ns) == (plain.start_ns, plain.end_ns)
    # AdamW's addcdiv_ runs inside the optimizer step: that time, and only it, leaves compute.
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    spans = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "aten::addcdiv_"]
    moved = union([round(s * 1000) for s, _ in spans], [round(e * 1000) for _, e in spans])
    assert moved.length > 0
    assert plain.compute_ns - custom.compute_ns == pytest.approx(moved.length, abs=len(spans))
