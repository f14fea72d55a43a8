"""Findings (docs/findings.md): each rule on a trace built to trigger it, and silent on one
built not to; the numbers are worked out by hand below each trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import traceview
from tests import tracebuild as tb
from tests.cli.run_cli import traceview as cli
from traceview.analysis.findings import NO_FINDINGS
from traceview.analysis.run_findings import memory_fit
from traceview.cli.reporters.as_table import WORDS
from traceview.parse.run_record import GlobalBatch, RunFlags, RunRecord

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
        # No run record: DDP is inferred from the all-reduces in backward, and said to be.
        "strategy": "ddp",
        "strategy_source": "inferred",
    }
    assert found.what.endswith("(ddp inferred from the traces)")
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
    # Every size in MiB, bucket_cap_mb's unit, in the words and the numbers alike.
    folder = job(tmp_path, {0: sized_calls([10, 20, 40, 80], alpha_us=10)})
    (found,) = [f for f in traceview.load(folder).findings if f.rule == "small_buckets"]
    assert found.numbers["median_mib"] == round(30_000 / 2**20, 3)  # 0.029
    assert found.numbers["size_for_90pct_mib"] == pytest.approx(0.0858, abs=1e-3)
    assert found.numbers["suggested_mib"] == pytest.approx(0.0858, abs=1e-3)
    assert "a median of 0.0286 MiB; 0.0858 MiB or more" in found.what
    assert found.numbers["bandwidth_gbps"] == pytest.approx(1.0, abs=1e-3)
    assert found.numbers["alpha_us"] == pytest.approx(10, abs=0.1)
    assert found.numbers["size_clusters"] == 4 and found.numbers["fitted_on"] == "duration"
    assert found.action == "larger buckets: bucket_cap_mb of about 0.0858 or more"


def test_bucket_advice_stops_at_one_bucket_for_the_step(tmp_path):
    # α = 50 µs: 90 % from 450 KB, three times the 150 KB a step sends: one bucket of 150 KB.
    folder = job(tmp_path, {0: sized_calls([10, 20, 40, 80], alpha_us=50)})
    (found,) = [f for f in traceview.load(folder).findings if f.rule == "small_buckets"]
    assert found.numbers["size_for_90pct_mib"] == pytest.approx(0.45e6 / 2**20, abs=1e-3)
    assert found.numbers["suggested_mib"] == pytest.approx(0.15e6 / 2**20, abs=1e-3)
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
    # Its lateness costs the other three 2 × 3 × 70 = 420 µs, all the waiting there is, and
    # 420 of their 600 µs in collectives.
    assert found.numbers == {
        "rank": 3, "caused_wait_ms": 0.42, "caused_share_pct": 100.0,
        "others_wait_for_it_pct": 70.0,
        # One step: too few to tell whether it recurs.
        "steps_waited_for": 1, "steps_with_a_straggler": 1, "recurrence": "too few steps",
    }  # fmt: skip


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
                     config=RunFlags(precision="fp32"), global_batch=batch, ranks=[])  # fmt: skip


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


@pytest.mark.cli
def test_findings_in_the_outputs(tmp_path):
    folder = job(tmp_path, {0: ddp_step(late_last_bucket=True)})
    table = cli("analyze", folder)
    assert "findings:" in table.out and "bucket_cap_mb" in table.out
    doc = json.loads(cli("analyze", folder, "--format", "json").out)
    assert [f["rule"] for f in doc["findings"]] == ["backward_tail"]
    quiet = job(tmp_path / "quiet", {0: ddp_step(late_last_bucket=False)})
    said = cli("analyze", quiet).out
    assert "\nfindings:" not in said and said.endswith(f"\n\n{NO_FINDINGS}\n{WORDS}")
    assert json.loads(cli("analyze", quiet, "--format", "json").out)["findings"] == []
    compared = json.loads(cli("compare", tmp_path / "job", "--format", "json").out)
    assert [f["rule"] for f in compared["findings"]] == ["backward_tail"]


def idle_step() -> list[tb.Event]:
    """Step [0,1000) on the host. Forward kernels [50,100) and [150,200) (a 50 µs gap among
    them); backward (an autograd function on the CPU) launches [300,400) and [420,500) (100 µs
    between the passes, a 20 µs gap among kernels) and an all-reduce [450,600); the optimizer's
    kernel runs [700,750) (100 µs after the last collective). Window [50,750) = 700 µs, busy
    50 + 50 + 100 + 180 + 50 = 430 µs: idle 270 µs = 38.6 %: 70 among kernels (25.9 %), 100
    between the passes (37.0 %), 100 after the last collective (37.0 %); 50 µs waited from the
    step's start to its first kernel."""
    return [
        tb.step(1, 0, 1000),
        tb.launch(1, 5),
        tb.launch(2, 10),
        tb.cpu_op(BACKWARD, 20, 20),
        tb.launch(3, 25),
        tb.launch(4, 30),
        tb.launch(5, 35),
        tb.launch(6, 50),
        tb.kernel("volta_sgemm_128x64_nn", 50, 50, corr=1),
        tb.kernel("volta_sgemm_128x64_nn", 150, 50, corr=2),
        tb.kernel("volta_sgemm_64x64_nt", 300, 100, corr=3),
        tb.kernel("volta_sgemm_64x64_nt", 420, 80, corr=4),
        nccl(ALLREDUCE, "allreduce", 450, 150, corr=5, seq=1, nbytes=1 << 20),
        tb.kernel("void multi_tensor_apply_kernel<AdamFunctor>", 700, 50, corr=6),
    ]


def test_a_gpu_idle_for_much_of_each_step_is_told_where_and_why(tmp_path):
    (found,) = [f for f in traceview.load(job(tmp_path, {0: idle_step()})).findings
                if f.rule == "gpu_idle"]  # fmt: skip
    assert found.numbers == {
        "idle_pct": 38.6,
        "among_kernels_pct": 25.9,
        "after_last_collective_pct": 37.0,
        "between_passes_pct": 37.0,
        "before_first_kernel_ms_per_step": 0.05,
    }
    assert found.what == (
        "the GPU is idle 39% of its steps' time (1 rank-steps): 37% after the last collective, "
        "37% between forward and backward, 26% between the kernels of a pass; and it waits "
        "0.1 ms before each step's first kernel"
    )
    assert found.action.startswith("the GPU waits on the host: host work or synchronisation")
    assert "before each step's first kernel, data loading" in found.action  # 50 of 270 µs


def test_no_idle_finding_below_the_threshold_or_on_the_cpu(tmp_path):
    busy = [e for e in idle_step() if e.get("args", {}).get("correlation") != 6]  # no optimizer
    busy = [*busy, tb.kernel("volta_sgemm_64x64_nt", 200, 100, corr=7), tb.launch(7, 12)]
    # Window [50,600): idle = among 50 + 20 = 70 µs of 550 = 12.7 %.
    assert "gpu_idle" not in rules(job(tmp_path / "busy", {0: busy}))
    cpu = job(tmp_path / "cpu", {0: tb.cpu_example()})
    assert "gpu_idle" not in rules(cpu)


def test_findings_from_sampled_ranks_say_so():
    pair = Path(__file__).parents[1] / "fixtures" / "traces" / "nccl_sampled_w128"
    found = traceview.load(pair).findings
    assert found and all(f.what.endswith("(from 2 of 128 ranks)") for f in found)
    assert all((f.numbers["ranks_traced"], f.numbers["world_size"]) == (2, 128) for f in found)
    (late,) = [f for f in found if f.rule == "straggler"]
    assert late.action.endswith(
        "it is the slowest of the 2 traced ranks; ranks not traced may be slower"
    )


def test_a_cpu_straggler_is_not_told_of_gpu_clocks(tmp_path):
    ranks = {r: collectives_at([350, 350] if r < 3 else [420, 420]) for r in range(4)}
    gpu = traceview.load(job(tmp_path, ranks)).findings[0]
    assert "GPU's clocks" in gpu.action
    sweep = Path(__file__).parents[2] / "sample_traces" / "cpu_sweep" / "ddp-dp2"
    (cpu,) = [f for f in traceview.load(sweep).findings if f.rule == "straggler"]
    assert "GPU" not in cpu.action and "CPU cores" in cpu.action
