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
    assert row.comm_volume_theory_psi == 0.0
    # What the run did is shown beside it: the trace's one all-reduce of 1000 floats = 4000 B.
    assert row.comm_volume_psi == pytest.approx(4000 / (PSI * 4))
