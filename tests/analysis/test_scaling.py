"""Scaling figures across runs, and the theory beside them: hand-made run records whose answers
are computed by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

import traceview
from tests import tracebuild as tb

PSI = tb.PSI
run_folder = tb.run_folder


def rows(*folders: Path):
    return {(r.strategy, r.dp): r for r in traceview.load_runs(folders).scaling()}


def test_step_time_is_the_median_with_its_spread_and_noise_is_said(tmp_path):
    # DP 1: steps after the first, 0.20 0.22 0.18 -> median 0.20 s, 4 samples -> 20 samples/s.
    one = run_folder(tmp_path, "dp1", steps=[9.0, 0.20, 0.22, 0.18])
    # DP 2: step 4 was profiled; 0.10 0.60 0.11 -> median 0.11 s, 8 samples -> 72.73 samples/s;
    # E(2) = 72.73 / (2 × 20) = 1.818; the steps vary 0.60 / 0.10 = 6.0×.
    two = run_folder(tmp_path, "dp2", dp=2, steps=[9.0, 0.10, 0.60, 0.11, 0.12], profiled=(4,))
    by = rows(one, two)
    base, noisy = by[("ddp", 1)], by[("ddp", 2)]
    assert (base.step_seconds, base.step_seconds_min, base.step_seconds_max) == (0.20, 0.18, 0.22)
    assert base.samples_per_s == pytest.approx(20.0) and base.caveats == ()
    assert (noisy.step_seconds, noisy.steps_measured, noisy.step_source) == (
        0.11,
        3,
        "unprofiled steps",
    )
    assert noisy.samples_per_s == pytest.approx(8 / 0.11)
    assert noisy.tokens_per_s == pytest.approx(512 / 0.11)
    assert noisy.efficiency == pytest.approx((8 / 0.11) / 40)
    assert noisy.caveats == (
        "noisy: step times vary 6.0× (0.100–0.600 s over 3 unprofiled steps)",
        "E(N) 1.82 is above 1: measurement noise, not scaling (rerun both on a quiet machine)",
    )


def test_a_noisy_baseline_is_named_on_the_rows_that_rest_on_it(tmp_path):
    one = run_folder(tmp_path, "dp1", steps=[1.0, 0.1, 0.3, 0.2])  # 3.0×
    two = run_folder(tmp_path, "dp2", dp=2, steps=[1.0, 0.4, 0.4, 0.4])
    by = rows(one, two)
    assert by[("ddp", 1)].caveats[0].startswith("noisy: step times vary 3.0×")
    assert by[("ddp", 2)].caveats == ("E(N) rests on a noisy DP-1 run",)


def test_only_profiled_steps_when_nothing_ran_unprofiled(tmp_path):
    folder = run_folder(tmp_path, "dp1", steps=[1.0, 0.3, 0.5], profiled=(1, 2))
    row = rows(folder)[("ddp", 1)]
    assert (row.step_seconds, row.step_source) == (0.4, "profiled steps")


@pytest.mark.parametrize(
    ("strategy", "precision", "textbook", "layout"),
    [
        # Ψ = 1000, N = 2. Textbook: fp32 4+4+8, mixed 2+2+12, sharded per stage.
        ("ddp", "fp32", 16 * PSI, None),
        ("ddp", "bf16", 16 * PSI, 16 * PSI),  # autocast: fp32 states, same total
        ("zero1", "fp32", 8 * PSI + 4 * PSI, None),
        ("zero1", "bf16", 4 * PSI + 6 * PSI, 8 * PSI + 4 * PSI),  # mixed 2+2+12/2; as run fp32
        ("zero2", "fp32", 4 * PSI + 6 * PSI, 4 * PSI + 8 * PSI),  # FSDP2 keeps its shards: +4Ψ/N
        ("zero2", "bf16", 2 * PSI + 7 * PSI, 2 * PSI + 8 * PSI),
        ("zero3", "fp32", 8 * PSI, None),
        ("zero3", "bf16", 8 * PSI, 8 * PSI),  # 2+2+12 and 4+4+8, both over N
    ],
)
def test_memory_theory_follows_the_runs_precision(tmp_path, strategy, precision, textbook, layout):
    folder = run_folder(
        tmp_path, "run", strategy=strategy, dp=2, steps=[1, 1, 1], precision=precision
    )
    row = rows(folder)[(strategy, 2)]
    assert row.precision == traceview.strategies.PRECISION_OF_RUN[precision]
    assert row.model_state_theory_bytes == pytest.approx(textbook)
    assert row.model_state_layout_bytes == (None if layout is None else pytest.approx(layout))


def test_no_communication_is_needed_at_dp_1(tmp_path):
    folder = run_folder(tmp_path, "dp1", strategy="zero3", steps=[1, 1, 1])
    row = rows(folder)[("zero3", 1)]
    assert (row.comm_volume_theory_psi, row.traffic_theory_psi) == (0.0, 0.0)
    # What the run did is shown beside it: one all-reduce of 1000 floats in two steps is
    # 1000 / 2 = 500 elements = 0.5 Ψ per step of buffers; on one rank nothing goes on the wire.
    assert row.comm_volume_psi == pytest.approx(0.5)
    assert row.traffic_psi == 0.0


def zero3_step(dtype: str = "BFloat16") -> list[tb.Event]:
    """One ZeRO-3 step on N = 4 ranks, Ψ = 1000: a forward and a backward all-gather of the
    parameters in bf16 (each 250 elements in, 1000 out) and a reduce-scatter of the fp32
    gradients (1000 in, 250 out)."""
    gather = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    scatter = "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    return [
        tb.step(1, 0, 100),
        tb.launch(1, 10),
        tb.launch(2, 20),
        tb.launch(3, 30),
        tb.launch(4, 40),
        tb.kernel("volta_sgemm_128x64_nn", 20, 60, corr=4),
        tb.collective(gather, 12, 5, 1, "allgather", (250, 1000), dtype, group=4),
        tb.collective(gather, 30, 5, 2, "allgather", (250, 1000), dtype, group=4),
        tb.collective(scatter, 60, 30, 3, "reduce_scatter", (1000, 250), "Float", group=4),
    ]


def test_traffic_counts_elements_times_the_bus_factor(tmp_path):
    folder = run_folder(tmp_path, "z3", strategy="zero3", dp=4, steps=[1, 1], events=zero3_step())
    row = rows(folder)[("zero3", 4)]
    # Buffers: 1000 + 1000 + 1000 elements = 3Ψ (bytes ÷ 4 would say 2000 + 2000 + 4000 = 2Ψ).
    assert row.comm_volume_psi == pytest.approx(3.0)
    # Traffic: each call × (N−1)/N = 3/4: 3000 × 0.75 / 1000 = 2.25Ψ, the theory's 3Ψ(N−1)/N.
    assert row.traffic_psi == pytest.approx(2.25)
    assert (row.traffic_theory_psi, row.comm_volume_theory_psi) == pytest.approx((2.25, 3.0))
    assert row.traffic_theory_as_run_psi is None and row.caveats == ()
    assert row.traffic_text == "2.25 (2.25)"


def test_a_barrier_is_no_part_of_the_traffic(tmp_path):
    barrier = "ncclDevKernel_AllReduce_Sum_u8_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    events = [
        *zero3_step(),
        tb.launch(9, 95),
        tb.kernel(barrier, 96, 2, corr=9, stream=20, **{"Collective name": "barrier"}),
    ]
    folder = run_folder(tmp_path, "z3", strategy="zero3", dp=4, steps=[1, 1], events=events)
    row = rows(folder)[("zero3", 4)]
    assert (row.traffic_psi, row.comm_volume_psi) == pytest.approx((2.25, 3.0))


def test_a_call_without_its_element_count_leaves_traffic_unknown_and_says_so(tmp_path):
    events = zero3_step(dtype="SomeNewType")  # the gathers' element size cannot be told
    folder = run_folder(tmp_path, "z3", strategy="zero3", dp=4, steps=[1, 1], events=events)
    row = rows(folder)[("zero3", 4)]
    assert (row.traffic_psi, row.comm_volume_psi) == (None, None)
    assert row.caveats == (
        "communication per step unknown: 2 of 3 calls have no recorded element count",
    )


def test_zero1_has_its_own_line_as_run(tmp_path):
    folder = run_folder(tmp_path, "z1", strategy="zero1", dp=4, steps=[1, 1])
    row = rows(folder)[("zero1", 4)]
    # Textbook (reduce-scatter + all-gather): 2 × 3/4 = 1.5Ψ; torch's ZeroRedundancyOptimizer:
    # all-reduce 2 × 3/4 = 1.5Ψ plus a broadcast of Ψ (bus factor 1) = 2.5Ψ.
    assert (row.traffic_theory_psi, row.traffic_theory_as_run_psi) == pytest.approx((1.5, 2.5))
    assert (row.comm_volume_theory_psi, row.comm_volume_theory_as_run_psi) == (2.0, 2.0)
