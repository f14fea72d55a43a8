"""A job without the harness's run record: its strategy inferred from what its traces show
(said as inferred, with its evidence), FSDP's post-backward work counted as backward, and DDP's
buckets found by their pattern. Hand-built traces (times in µs) and the committed sweep with its
records taken away."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

import traceview
from tests import tracebuild as tb

SWEEP = Path(__file__).parents[2] / "sample_traces" / "cpu_sweep"
SCATTER = "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
GATHER = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def fsdp_root_step() -> list[tb.Event]:
    """Forward compute [30,250); backward: autograd's compute [300,500); then FSDP2's root
    callback launches the root's gradient reduce-scatter, which runs [500,700)."""
    return [
        tb.step(1, 0, 1000),
        tb.launch(3, 20),
        tb.kernel("volta_sgemm_128x64_nn", 30, 220, corr=3),
        tb.cpu_op("autograd::engine::evaluate_function: MmBackward0", 100, 100),
        tb.launch(1, 110),
        tb.kernel("volta_sgemm_64x64_nt", 300, 200, corr=1),
        tb.span("FSDP::root_post_backward_callback", 250, 50, tid=1),
        tb.span("FSDP::post_backward_reduce", 255, 35, tid=1),
        tb.launch(2, 260),
        tb.collective(SCATTER, 500, 200, 2, "reduce_scatter", (1000, 500), group=2),
    ]


def test_fsdp_root_reduce_scatter_from_its_callback_is_backward(tmp_path):
    trace = tb.write(tmp_path / "rank0.json", tb.document(fsdp_root_step(), world=1))
    job = traceview.load(trace)
    (call,) = job.calls.to_dicts()
    assert call["backward"] and call["label"] == "root"
    # Backward compute ends at 500; the reduce-scatter at 700: a tail of 200 µs, all exposed.
    (rank,) = job.ranks
    assert [t.tail_ns for t in rank.backward_tails] == [200_000]
    (found,) = [f for f in job.findings if f.rule == "backward_tail"]
    # 200 of the 670 µs GPU step window [30,700).
    assert found.numbers == {
        "tail_exposed_ms_per_step": 0.2,
        "tail_share_pct": 100.0,
        "step_time_share_pct": 29.9,
        "last_unit": "root",
    }
    assert found.action.startswith("FSDP reduces unit root's gradients only once all of them")


def fsdp_gathers(again_in_backward: bool) -> list[tb.Event]:
    """FSDP2: the parameters gathered in forward, and (ZeRO-3) again in backward."""
    events = [
        tb.step(1, 0, 1000),
        tb.span("FSDP::all_gather (blocks.0)", 10, 20, tid=1),
        tb.launch(1, 12),
        tb.collective(GATHER, 20, 50, 1, "allgather", (500, 1000), group=2),
        tb.launch(2, 80),
        tb.kernel("volta_sgemm_128x64_nn", 90, 100, corr=2),
    ]
    if again_in_backward:
        events += [
            tb.span("FSDP::pre_backward (blocks.0)", 300, 40, tid=1),
            tb.span("FSDP::all_gather (blocks.0)", 305, 20, tid=1),
            tb.launch(3, 310),
            tb.collective(GATHER, 320, 50, 3, "allgather", (500, 1000), group=2),
        ]
    return events


@pytest.mark.parametrize(("again", "inferred"), [(True, "zero3"), (False, "zero2")])
def test_fsdp_zero2_or_zero3_from_its_all_gathers(tmp_path, again, inferred):
    trace = tb.write(tmp_path / "rank0.json", tb.document(fsdp_gathers(again)))
    of = traceview.load(trace).strategy_of
    assert (of.name, of.source, of.said) == (inferred, "inferred", f"{inferred} (inferred)")
    if again:
        assert of.evidence.startswith("FSDP2 all-gathers the parameters again in backward (1 of 2")
    else:
        assert of.evidence.startswith("FSDP2 all-gathers the parameters in forward only (1 in")


@pytest.mark.parametrize(
    ("marker", "inferred", "evidence"),
    [
        ("DistributedDataParallel.forward", "ddp", "DistributedDataParallel's forward in the 1"),
        ("Optimizer.step#ZeroRedundancyOptimizer.step", "zero1", "torch's ZeroRedundancyOptim"),
        (None, "ddp", "4 all-reduces launched from the backward pass in the 1 rank trace"),
    ],
)
def test_ddp_and_zero1_from_their_record_functions(tmp_path, marker, inferred, evidence):
    trace = tb.write(tmp_path / "rank0.json", tb.document(tb.ddp_steps(marker)))
    job = traceview.load(trace)
    assert (job.strategy, job.strategy_of.source) == (inferred, "inferred")
    assert job.strategy_of.evidence.startswith(evidence)
    # The k-th backward all-reduce of each step is bucket k: same count and sizes every step.
    assert job.calls["label"].to_list() == ["bucket 0", "bucket 1"] * 2


def test_no_buckets_where_steps_differ(tmp_path):
    events = tb.ddp_steps("DistributedDataParallel.forward")
    events[-1]["args"]["In msg nelems"] = events[-1]["args"]["Out msg nelems"] = 400
    job = traceview.load(tb.write(tmp_path / "rank0.json", tb.document(events)))
    assert job.calls["bucket"].null_count() == 4


def test_nothing_to_tell_stays_unknown(tmp_path):
    job = traceview.load(tb.write(tmp_path / "r.json", tb.document(tb.gpu_example(group=2))))
    assert (job.strategy, job.strategy_of.source, job.strategy_of.said) == (
        None,
        "unknown",
        "unknown",
    )


def without_records(tmp_path: Path, run: str) -> Path:
    """The sweep's run with its run.json gone and the traces' own record of their run removed:
    what a user's own job looks like."""
    out = tmp_path / run
    out.mkdir()
    for trace in (SWEEP / run).glob("*.pt.trace.json.gz"):
        doc = json.loads(gzip.decompress(trace.read_bytes()))
        doc.pop("traceview_run")
        (out / trace.name).write_bytes(gzip.compress(json.dumps(doc).encode()))
    return out


@pytest.mark.parametrize("run", ["ddp-dp2", "zero1-dp4", "zero2-dp2", "zero3-dp4"])
def test_the_sweeps_strategies_are_inferred_from_their_traces(tmp_path, run):
    recorded = traceview.load(SWEEP / run)
    foreign = traceview.load(without_records(tmp_path, run))
    assert recorded.strategy_of.source == "run record"
    assert (foreign.strategy, foreign.strategy_of.source) == (recorded.strategy, "inferred")
    # DDP's buckets by their pattern are the buckets the run record's layout names.
    assert foreign.calls["bucket"].to_list() == recorded.calls["bucket"].to_list()
    assert [f.rule for f in foreign.findings] == [f.rule for f in recorded.findings]


def test_the_traces_own_record_of_their_run_comes_before_inference(tmp_path):
    shutil.copytree(SWEEP / "zero2-dp2", tmp_path / "z2", ignore=shutil.ignore_patterns("run.*"))
    assert traceview.load(tmp_path / "z2").strategy_of.source == "trace metadata"
