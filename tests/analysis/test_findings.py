"""Findings (README "Findings"): each rule on a trace built to trigger it, and silent on one
built not to; the numbers are worked out by hand below each trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import traceview
from tests import tracebuild as tb
from tests.cli.run_cli import traceview as cli
from traceview.analysis.findings import memory_fit
from traceview.parse.run_record import GlobalBatch, RunRecord

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
ALLGATHER = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
BACKWARD = "autograd::engine::evaluate_function: AddmmBackward0"


def nccl(name: str, kind: str, ts: float, dur: float, corr: int, seq: int, nbytes: int):
    return tb.kernel(
        name, ts, dur, corr=corr, stream=20,
        **{"Collective name": kind, "In msg nelems": nbytes // 4, "Out msg nelems": nbytes // 4,
           "dtype": "Float", "Process Group Name": "0", "Seq": seq},
    )  # fmt: skip


def ddp_step(*, late_last_bucket: bool) -> list[tb.Event]:
    """Step 1 = [0,1000) µs. Backward (an autograd function on the CPU, [100,600)) launches the
    backward compute [150,600) and two 1 MB bucket all-reduces: bucket 0 at [350,450), hidden
    behind compute; bucket 1 at [600,900) after backward ends — 300 µs exposed, all of it in the
    tail — or, not late, at [400,550), hidden too."""
    last = (600, 300) if late_last_bucket else (400, 150)
    return [
        tb.step(1, 0, 1000),
        tb.cpu_op(BACKWARD, 100, 500),
        tb.launch(1, 110),
        tb.launch(2, 300),
        tb.launch(3, 390),
        tb.kernel("volta_sgemm_128x64_nt", 150, 450, corr=1),
        nccl(ALLREDUCE, "allreduce", 350, 100, corr=2, seq=1, nbytes=1 << 20),
        nccl(ALLREDUCE, "allreduce", *last, corr=3, seq=2, nbytes=1 << 20),
    ]


def job(tmp_path: Path, ranks: dict[int, list[tb.Event]], strategy: str | None = None) -> Path:
    folder = tmp_path / "job"
    folder.mkdir(parents=True)
    extra = {"traceview_run": {"strategy": strategy, "world_size": len(ranks)}} if strategy else {}
    for rank, events in ranks.items():
        tb.write(
            folder / f"rank{rank}.json", tb.document(events, rank=rank, world=len(ranks), **extra)
        )
    return folder


def rules(folder: Path) -> list[str]:
    return [f.rule for f in traceview.load_runs([folder]).findings()]


def test_exposed_gradient_communication_in_the_backward_tail(tmp_path):
    folder = job(tmp_path, {0: ddp_step(late_last_bucket=True)})
    (found,) = traceview.load(folder).findings
    assert found.rule == "backward_tail"
    assert found.numbers == {
        "tail_exposed_ms_per_step": 0.3,  # bucket 1: [600,900)
        "tail_share_pct": 100.0,
        # 300 µs of the GPU step window, which its kernels span: [150,900) = 750 µs.
        "step_time_share_pct": 40.0,
    }
    assert "bucket_cap_mb" in found.action


def test_no_tail_when_the_last_bucket_is_hidden(tmp_path):
    assert rules(job(tmp_path, {0: ddp_step(late_last_bucket=False)})) == []


def sized_calls(sizes_kb: list[int], alpha_us: float) -> list[tb.Event]:
    """All-reduces of these sizes, each lasting α + size / (1 GB/s): 1 KB takes 1 µs."""
    events: list[tb.Event] = [tb.step(1, 0, 10_000)]
    t = 100.0
    for i, kb in enumerate(sizes_kb):
        events += [
            tb.launch(i + 1, t - 50),
            nccl(ALLREDUCE, "allreduce", t, alpha_us + kb, i + 1, i + 1, kb * 1000),
        ]
        t += 1000
    return events


def test_buckets_below_the_size_that_reaches_90_percent_of_the_bandwidth(tmp_path):
    # α = 10 µs, 1 GB/s: α costs 10 % from 9 × 10 µs × 1 GB/s = 90 KB; median 30 KB; a step
    # sends 10 + 20 + 40 + 80 = 150 KB, more than 90 KB: bucket_cap_mb 0.09 MB = 0.0858 MiB.
    folder = job(tmp_path, {0: sized_calls([10, 20, 40, 80], alpha_us=10)})
    (found,) = [f for f in traceview.load(folder).findings if f.rule == "small_buckets"]
    assert found.numbers["median_mb"] == 0.03
    assert found.numbers["size_for_90pct_mb"] == pytest.approx(0.09, abs=1e-3)
    assert found.numbers["suggested_mb"] == pytest.approx(0.09, abs=1e-3)
    assert found.numbers["bandwidth_gbps"] == pytest.approx(1.0, abs=1e-3)
    assert found.numbers["alpha_us"] == pytest.approx(10, abs=0.1)
    assert found.numbers["size_clusters"] == 4 and found.numbers["fitted_on"] == "duration"
    assert found.action == "larger buckets: bucket_cap_mb of about 0.0858 or more"


def test_bucket_advice_stops_at_one_bucket_for_the_step(tmp_path):
    # α = 50 µs: 90 % from 450 KB, three times the 150 KB a step sends: one bucket of 150 KB.
    folder = job(tmp_path, {0: sized_calls([10, 20, 40, 80], alpha_us=50)})
    (found,) = [f for f in traceview.load(folder).findings if f.rule == "small_buckets"]
    assert found.numbers["size_for_90pct_mb"] == pytest.approx(0.45, abs=1e-3)
    assert found.numbers["suggested_mb"] == pytest.approx(0.15, abs=1e-3)
    assert found.action == (
        "larger buckets: bucket_cap_mb of about 0.143 or more — one for all of a step's "
        "gradients, which leaves nothing to overlap"
    )


def test_a_zero2_run_is_told_of_fsdp_units_not_bucket_cap_mb(tmp_path):
    folder = job(tmp_path, {0: sized_calls([10, 20, 40, 80], alpha_us=50)}, strategy="zero2")
    (found,) = [f for f in traceview.load(folder).findings if f.rule == "small_buckets"]
    assert found.action.startswith("larger messages: fewer, larger FSDP units")


def test_no_bucket_advice_when_buckets_are_large_enough(tmp_path):
    # The same link, 1 to 8 MB messages: well past 450 KB.
    folder = job(tmp_path, {0: sized_calls([1000, 2000, 4000, 8000], alpha_us=50)})
    assert "small_buckets" not in rules(folder)


def zero3_step(*, exposed: bool) -> list[tb.Event]:
    """Compute [0,300) and [500,800) of a [0,1000) step; a 200 µs all-gather either between
    them at [300,500) (exposed: 100 % of its time) or under compute."""
    at = 300 if exposed else 50
    return [
        tb.step(1, 0, 1000),
        tb.launch(1, 1), tb.launch(2, 2), tb.launch(3, 3),
        tb.kernel("volta_sgemm_128x64_nn", 0, 300, corr=1),
        tb.kernel("volta_sgemm_128x64_nn", 500, 300, corr=2),
        nccl(ALLGATHER, "allgather", at, 200, corr=3, seq=1, nbytes=1 << 20),
    ]  # fmt: skip


def test_zero3_all_gathers_left_exposed(tmp_path):
    folder = job(tmp_path, {0: zero3_step(exposed=True)}, strategy="zero3")
    (found,) = traceview.load(folder).findings
    assert found.rule == "unhidden_gathers"
    # 200 µs of the GPU step window its kernels span, [0,800).
    assert found.numbers == {"gather_exposed_pct": 100.0, "step_time_share_pct": 25.0}
    assert "prefetch" in found.action


def test_no_prefetch_advice_when_gathers_are_hidden_or_the_run_is_not_zero3(tmp_path):
    assert rules(job(tmp_path / "a", {0: zero3_step(exposed=False)}, strategy="zero3")) == []
    assert rules(job(tmp_path / "b", {0: zero3_step(exposed=True)}, strategy="ddp")) == []


def collectives_at(starts: list[float]) -> list[tb.Event]:
    """Two all-reduces ending at 450 and 950 µs, this rank arriving at starts[i] (+ 500 i)."""
    events: list[tb.Event] = [tb.step(1, 0, 1000)]
    for i, start in enumerate(starts):
        ts = start + 500 * i
        events += [
            tb.launch(i + 1, ts - 10),
            nccl(ALLREDUCE, "allreduce", ts, 450 + 500 * i - ts, i + 1, i + 1, 1 << 20),
        ]
    return events


def test_one_rank_arriving_last(tmp_path):
    # Ranks 0-2 arrive at 350 (and 850), rank 3 at 420 (920): each of them waits 70 of its
    # 100 µs in the collective for rank 3, which arrives last at both.
    ranks = {r: collectives_at([350, 350] if r < 3 else [420, 420]) for r in range(4)}
    (found,) = traceview.load(job(tmp_path, ranks)).findings
    assert found.rule == "straggler"
    assert found.numbers["rank"] == 3
    assert (found.numbers["last_arrivals"], found.numbers["matched"]) == (2, 2)
    assert found.numbers["others_wait_pct"] == 70.0


def test_no_straggler_when_ranks_take_turns_arriving_last(tmp_path):
    # Rank r arrives 1 µs after the one before it, and the last is a different rank each time:
    # at most 3 µs of 100 waited.
    ranks = {r: collectives_at([350 + (r + 0) % 4, 350 + (r + 2) % 4]) for r in range(4)}
    assert rules(job(tmp_path, ranks)) == []


def test_noisy_step_times(tmp_path):
    tb.run_folder(tmp_path, "noisy", steps=[1.0, 0.1, 0.6, 0.1, 0.1, 0.2, 0.2])
    tb.run_folder(tmp_path, "quiet", steps=[1.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
    found = traceview.load_runs([tmp_path]).findings()
    assert [(Path(f.job).name, f.rule) for f in found] == [("noisy", "noisy_steps")]
    assert found[0].numbers == {"min_s": 0.1, "max_s": 0.6}
    assert found[0].what.startswith("step times vary 6.0×")


def record(strategy: str, params: int, dp: int) -> RunRecord:
    batch = GlobalBatch(micro_batch=1, dp=dp, grad_accum=1, samples=dp, tokens=dp)
    return RunRecord(record_version=1, strategy=strategy, world_size=dp, num_params=params,
                     config={"precision": "fp32"}, global_batch=batch, ranks=[])  # fmt: skip


def test_the_least_sharding_that_fits_a_memory_budget():
    # Ψ = 1e9 on 8 ranks, fp32 Adam (16 bytes per parameter): ddp 16 GB, zero1 4 + 4 + 8/8 =
    # 9 GB, zero2 4 + 12/8 = 5.5 GB, zero3 16/8 = 2 GB per rank.
    found = memory_fit(record("ddp", 10**9, 8), "run", 6e9)
    assert found is not None
    assert [found.numbers[f"{s}_bytes"] for s in ("ddp", "zero1", "zero2", "zero3")] == [
        16e9,
        9e9,
        5.5e9,
        2e9,
    ]
    assert found.action.startswith("zero2 is the least sharding that fits")
    # 1 GB per rank: none fits at DP 8; zero3's 16 GB in all needs 16 ranks.
    none = memory_fit(record("ddp", 10**9, 8), "run", 1e9)
    assert none is not None and "zero3 fits from DP 16" in none.action
    # The answer is the model's and the DP degree's, whichever strategy the run used.
    same = memory_fit(record("zero3", 10**9, 8), "run", 6e9)
    assert same is not None and same.action == found.action


def test_findings_in_the_outputs(tmp_path):
    folder = job(tmp_path, {0: ddp_step(late_last_bucket=True)})
    table = cli("analyze", folder)
    assert "findings:" in table.out and "bucket_cap_mb" in table.out
    doc = json.loads(cli("analyze", folder, "--format", "json").out)
    assert [f["rule"] for f in doc["findings"]] == ["backward_tail"]
    quiet = job(tmp_path / "quiet", {0: ddp_step(late_last_bucket=False)})
    assert "findings:" not in cli("analyze", quiet).out
    compared = json.loads(cli("compare", tmp_path / "job", "--format", "json").out)
    assert [f["rule"] for f in compared["findings"]] == ["backward_tail"]
