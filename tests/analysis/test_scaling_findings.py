"""Findings across DP degrees (docs/findings.md "compute_scaling", "prediction_missed"): runs of
one strategy built by hand, their per-rank compute set per degree, the figures worked out below."""

from __future__ import annotations

import pytest

import traceview
from tests import tracebuild as tb


def one_step(compute_us: float, dp: int) -> list[tb.Event]:
    """Step 1 = [0,1000) µs: compute [50, 50 + C) on the GPU, then a 4 KB all-reduce of `dp`
    ranks for 20 µs, exposed: window [50, 70 + C), idle 0."""
    return [
        tb.step(1, 0, 1000),
        tb.launch(1, 10),
        tb.launch(2, 20),
        tb.kernel("volta_sgemm_128x64_nn", 50, compute_us, corr=1),
        tb.collective(tb.DDP_ALL_REDUCE, 50 + compute_us, 20, corr=2, collective="allreduce",
                      nelems=(1000, 1000), group=dp, **{"Process Group Name": "0", "Seq": 1}),
    ]  # fmt: skip


def sweep(tmp_path, compute_dp4: float, step_dp4: float):
    """DP 1 and DP 2 compute 100 µs a step and take 120 µs; DP 4 computes `compute_dp4` µs and
    takes `step_dp4` (the run records' unprofiled steps)."""
    runs = [(1, 100, 120e-6), (2, 100, 120e-6), (4, compute_dp4, step_dp4)]
    return [
        tb.run_folder(tmp_path, f"ddp-dp{dp}", dp=dp, steps=[9.0, step, step, step],
                      events=one_step(compute, dp))
        for dp, compute, step in runs
    ]  # fmt: skip


def test_per_rank_compute_that_grows_with_the_degree_is_a_finding_ahead_of_the_rest(tmp_path):
    runs = traceview.load_runs(sweep(tmp_path, compute_dp4=180, step_dp4=200e-6))
    found = runs.findings()
    # 100 µs at DP 1 and 2, 180 at DP 4: +80 % — beyond 15 %, and first.
    assert found[0].rule == "compute_scaling"
    assert found[0].job.endswith("ddp-dp4")
    assert found[0].numbers == {
        "strategy": "ddp", "compute_ms_dp1": 0.1, "compute_ms_dp2": 0.1, "compute_ms_dp4": 0.18,
        "largest_change_pct": 80.0,
    }  # fmt: skip
    assert "DP 1 0.1 ms, DP 2 0.1 ms (+0%), DP 4 0.2 ms (+80%)" in found[0].what


def test_a_missed_prediction_says_which_part_changed(tmp_path):
    runs = traceview.load_runs(sweep(tmp_path, compute_dp4=180, step_dp4=200e-6))
    (checked,) = runs.checked_predictions()
    # From DP 2 (120 µs; 20 µs of all-reduce, none hidden), the all-reduce's bus factor 1 → 1.5
    # makes it 30 µs: 130 µs predicted against 200 measured, −35 %.
    assert checked.predicted_step_seconds == pytest.approx(130e-6)
    assert checked.error_pct == pytest.approx(-35.0)
    (missed,) = [f for f in runs.findings() if f.rule == "prediction_missed"]
    # Per rank and step from DP 2 to DP 4: compute +80 µs, exposed communication and idle 0.
    assert missed.numbers == {
        "strategy": "ddp", "dp": 4, "from_dp": 2, "error_pct": -35.0,
        "compute_change_ms": 0.08, "exposed_comm_change_ms": 0.0, "idle_change_ms": 0.0,
        "largest": "compute",
    }  # fmt: skip
    assert "the largest change is compute" in missed.what
    assert "compute_scaling" in missed.action


def test_compute_that_holds_and_a_prediction_that_holds_say_nothing(tmp_path):
    runs = traceview.load_runs(sweep(tmp_path, compute_dp4=105, step_dp4=130e-6))
    rules = {f.rule for f in runs.findings()}
    # +5 % compute; the prediction (130 µs) is the measurement.
    assert not rules & {"compute_scaling", "prediction_missed"}
