"""Every real trace in tests/fixtures/traces (excerpts of multi-GPU jobs recorded elsewhere;
provenance in that folder's README): structure, no work dropped, metrics against an oracle."""

import gzip
import json
import math
from pathlib import Path

import polars as pl
import pytest

from tests.integration.oracle import sweep_breakdown
from traceview import analyze_trace
from traceview.model import build_timeline
from traceview.parse import read_trace

FIXTURES = Path(__file__).parents[1] / "fixtures" / "traces"
ALL = sorted(p for p in FIXTURES.rglob("*.json.gz"))
FIELDS = ("compute", "comm", "overlap", "exposed_comm", "compute_only", "idle")


def raw_events(path: Path) -> list[dict]:
    return json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


def test_every_fixture_trace_has_its_provenance_written():
    readme = (FIXTURES / "README.md").read_text()
    undescribed = [p.name for p in ALL if p.name not in readme and p.parent.name not in readme]
    assert len(ALL) == 9 and undescribed == []


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_metrics_match_an_independent_sweep(path):
    timeline = build_timeline(read_trace(path))
    report = analyze_trace(path)
    iv = timeline.intervals
    compute = iv.filter(pl.col("kind") == "compute").select("ts_ns", "end_ns").rows()
    comm = iv.filter(pl.col("kind") == "comm").select("ts_ns", "end_ns").rows()
    assert report.total is not None
    t = report.total
    expected = sweep_breakdown(compute, comm, t.start_ns, t.end_ns)
    if not timeline.comm_measured:  # GPU work without GPU activity: only compute is known
        expected = {f: (v if f == "compute" else None) for f, v in expected.items()}
    assert {f: getattr(t, f"{f}_ns") for f in FIELDS} == expected
    for s in report.steps:
        b = s.breakdown
        if timeline.mode == "gpu":  # a step's own intervals
            rows = iv.filter(pl.col("step") == s.step)
            compute = rows.filter(pl.col("kind") == "compute").select("ts_ns", "end_ns").rows()
            comm = rows.filter(pl.col("kind") == "comm").select("ts_ns", "end_ns").rows()
        expected = sweep_breakdown(compute, comm, b.start_ns, b.end_ns)
        if not timeline.comm_measured:
            expected = {f: (v if f == "compute" else None) for f, v in expected.items()}
        assert {f: getattr(b, f"{f}_ns") for f in FIELDS} == expected


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_invariants(path):
    report = analyze_trace(path)
    for b in [report.total, *(s.breakdown for s in report.steps)]:
        assert b is not None
        if b.comm_ns is None:  # not measurable: everything that depends on it is unknown
            assert {b.overlap_ns, b.exposed_comm_ns, b.compute_only_ns, b.idle_ns} == {None}
            assert b.overlap_pct is None
            continue
        assert b.overlap_ns + b.exposed_comm_ns == b.comm_ns
        assert b.overlap_ns + b.compute_only_ns == b.compute_ns
        assert b.compute_ns + b.exposed_comm_ns + b.idle_ns == b.window_ns
        assert min(b.idle_ns, b.overlap_ns) >= 0
        assert (b.overlap_pct is None) == (b.comm_ns == 0)


@pytest.mark.parametrize(
    "path",
    [p for p in ALL if "no_distinfo" not in p.name and "gloo" not in p.name],
    ids=lambda p: p.name,
)
def test_no_gpu_work_is_dropped(path):
    events = [e for e in raw_events(path) if e.get("ph") == "X"]
    cats = [e.get("cat", "").lower() for e in events]
    kernels = sum(c == "kernel" for c in cats)
    memory = sum(c in ("gpu_memcpy", "gpu_memset", "memcpy", "memset") for c in cats)
    iv = build_timeline(read_trace(path)).intervals
    kinds = iv["kind"].value_counts().rows()
    counts = dict(kinds)
    assert counts.get("compute", 0) + counts.get("comm", 0) == kernels
    assert counts.get("memory", 0) == memory


def test_ddp_resnet_rank0_step5():
    path = FIXTURES / "nccl_ddp_w2_rank0_step5.json.gz"
    report = analyze_trace(path)
    assert (report.rank, report.world_size, report.backend, report.mode) == (0, 2, "nccl", "gpu")
    assert [s.step for s in report.steps] == [5]
    by_type = {c.collective: c for c in report.collectives}
    assert set(by_type) == {"all_reduce", "broadcast"}
    # Each DDP bucket all-reduce is one NCCL kernel whose args record its size.
    kernels = [
        e
        for e in raw_events(path)
        if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel_AllReduce")
    ]
    assert by_type["all_reduce"].count == len(kernels) == 5
    assert by_type["all_reduce"].bytes == sum(4 * k["args"]["In msg nelems"] for k in kernels)
    assert by_type["all_reduce"].total_ns == pytest.approx(
        sum(k["dur"] for k in kernels) * 1000, abs=len(kernels)
    )


def test_w8_all_to_all_is_named_by_its_cpu_call_and_sized_from_shapes():
    path = FIXTURES / "nccl_w8_rank3_step1010.json.gz"
    report = analyze_trace(path)
    assert (report.rank, report.world_size) == (3, 8)
    by_type = {c.collective: c for c in report.collectives}
    # SendRecv kernels launched inside nccl:all_to_all spans are all-to-alls.
    spans = [e for e in raw_events(path) if e.get("name") == "nccl:all_to_all"]
    assert by_type["all_to_all"].count == len(spans) == 7
    # Their tensors are float or int here: 4 bytes per element either way.
    assert {e["args"]["Input type"][0] for e in spans} == {"float", "int"}
    numels = [math.prod(e["args"]["Input Dims"][0]) for e in spans]
    assert by_type["all_to_all"].bytes == 4 * sum(numels)


def test_kernels_launched_before_the_trace_began_belong_to_no_step():
    # The same real step 1010, alone and as a trace that started mid-run: with the GPU work
    # step 1009 launched still on the device, but not 1009's launches.
    alone = analyze_trace(FIXTURES / "nccl_w8_rank3_step1010.json.gz")
    mid_run = FIXTURES / "nccl_w8_rank3_step1010_started_mid_run.json.gz"
    report = analyze_trace(mid_run)
    assert [s.step for s in report.steps] == [1010]
    assert report.steps[0].breakdown == alone.steps[0].breakdown
    launched = {
        e["args"]["correlation"]
        for e in raw_events(mid_run)
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }
    earlier = [
        e
        for e in raw_events(mid_run)
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
        and e["args"]["correlation"] not in launched
    ]
    before = report.before_first_step
    assert before is not None
    # Each kind counted on its own: kernels, memcpy and memset.
    by_cat = {
        c: sum(e["cat"] == c for e in earlier) for c in ("kernel", "gpu_memcpy", "gpu_memset")
    }
    assert (before.kernels, before.memcpy, before.memset) == tuple(by_cat.values())
    assert all(by_cat.values())
    said = f"{by_cat['kernel']:,} kernels, {by_cat['gpu_memcpy']:,} memcpy, {by_cat['gpu_memset']:,} memset were launched before"
    assert any(n.message.startswith(said) for n in report.notes)
    spanning = [e for e in earlier if e["cat"] == "kernel"]
    assert before.breakdown.start_ns == round(min(e["ts"] for e in spanning) * 1000)
    assert before.breakdown.end_ns == round(max(e["ts"] + e["dur"] for e in spanning) * 1000)
    # Everything still counts in the whole-trace totals.
    assert report.total is not None and alone.total is not None
    assert report.total.compute_ns > alone.total.compute_ns


def test_sampled_two_ranks_of_a_128_rank_job():
    reports = [analyze_trace(p) for p in sorted((FIXTURES / "nccl_sampled_w128").iterdir())]
    assert [(r.rank, r.world_size) for r in reports] == [(0, 128), (1, 128)]
    for r in reports:
        assert [s.step for s in r.steps] == [551, 552]
        assert {c.collective for c in r.collectives} == {"all_to_all", "all_reduce", "all_gather"}


def test_sampled_all_gathers_are_sized_by_output_in_groups_of_64():
    # Old-style args: c10d::_allgather_base_ lists the gathered output, then this rank's input.
    path = FIXTURES / "nccl_sampled_w128" / "rank0.json.gz"
    ops = [e for e in raw_events(path) if e.get("name") == "c10d::_allgather_base_"]
    ((output, inputs),) = {tuple(math.prod(d) for d in e["args"]["Input Dims"][:2]) for e in ops}
    calls = analyze_trace(path).calls
    gathers = calls.filter(pl.col("collective") == "all_gather")
    assert gathers["bytes"].to_list() == [output, output]  # 1 byte per element (signed char)
    assert gathers["group_size"].to_list() == [output // inputs] * 2 == [64, 64]
    # Nothing records the other calls' groups: busbw is left unknown, not taken at 128.
    others = calls.filter(pl.col("collective") != "all_gather")
    assert others["group_size"].null_count() == others["busbw_gbps"].null_count() == others.height


def test_gloo_cpu_only_trace():
    report = analyze_trace(FIXTURES / "gloo_cpu_w300_rank34.json.gz")
    assert (report.rank, report.world_size, report.backend, report.mode) == (34, 300, "gloo", "cpu")
    (c,) = report.collectives
    assert (c.collective, c.count) == ("all_reduce", 10)
    # Every one of the job's process groups has 300 ranks: so does each call's.
    assert report.calls["group_size"].unique().to_list() == [300]


def test_trace_without_distributed_info_or_gpu_activity():
    # NCCL all-to-alls launched, no GPU activity recorded: communication is unknown, not 0.
    report = analyze_trace(FIXTURES / "nccl_no_distinfo.json.gz")
    assert report.rank is None and report.world_size is None
    t = report.total
    assert t is not None and t.compute_ns > 0
    assert (t.comm_ns, t.overlap_ns, t.exposed_comm_ns, t.overlap_pct) == (None, None, None, None)
    (note,) = [n for n in report.notes if "no GPU activity" in n.message]
    assert note.caveat and "cannot be measured" in note.message


def test_single_gpu_trace_without_communication():
    report = analyze_trace(FIXTURES / "single_gpu_no_comm_step6.json.gz")
    assert report.mode == "gpu" and report.collectives == ()
    assert [s.step for s in report.steps] == [6]
    assert report.total is not None and report.total.overlap_pct is None
