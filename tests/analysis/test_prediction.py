"""The what-if prediction of efficiency at larger DP degrees, on hand-made runs whose answers are
computed by hand (docs/commands/dashboard.md: the prediction's model)."""

from __future__ import annotations

import pytest

import traceview
from tests import tracebuild as tb

# tracebuild.gpu_example per step: step 1 communicates [70,140) µs beside compute [50,130):
# comm 70, hidden 60, exposed 10; step 2 has no communication. Means over the steps: comm 35 µs,
# hidden 30 µs, exposed 5 µs. Both runs take 100 µs per measured step.
STEP_S = 100e-6


def _predictions(tmp_path):
    one = tb.run_folder(tmp_path, "dp1", steps=[9.0, STEP_S, STEP_S, STEP_S])
    two = tb.run_folder(tmp_path, "dp2", dp=2, steps=[9.0, STEP_S, STEP_S, STEP_S])
    return {p.dp: p for p in traceview.load_runs([one, two]).predictions()}


def test_communication_grows_with_the_bus_factor_and_only_its_excess_is_exposed(tmp_path):
    by = _predictions(tmp_path)
    assert sorted(by) == [4, 8, 16]  # 2×, 4× and 8× the largest measured degree
    # all-reduce bus factor 2(N-1)/N: 1 at N=2 (the reference), 1.5 at 4, 1.75 at 8, 1.875 at 16.
    # N=4: comm 35 × 1.5 = 52.5; exposed 52.5 - 30 = 22.5; step 100 + (22.5 - 5) = 117.5 µs.
    # N=8: comm 61.25; exposed 31.25; step 126.25 µs. N=16: 65.625; 35.625; 130.625 µs.
    expected = {4: 117.5e-6, 8: 126.25e-6, 16: 130.625e-6}
    for n, step in expected.items():
        assert by[n].strategy == "ddp"
        assert by[n].step_seconds == pytest.approx(step)
        assert by[n].efficiency == pytest.approx(STEP_S / step)  # weak scaling: T(1) / T(N)
    assert by[4].efficiency == pytest.approx(0.851064, abs=1e-6)


def test_no_prediction_without_a_dp_1_run_of_the_same_strategy(tmp_path):
    two = tb.run_folder(tmp_path, "dp2", dp=2, steps=[9.0, STEP_S, STEP_S])
    other = tb.run_folder(tmp_path, "z1", strategy="zero1", steps=[9.0, STEP_S, STEP_S])
    assert traceview.load_runs([two, other]).predictions() == []


def test_no_prediction_from_runs_at_dp_1_only(tmp_path):
    one = tb.run_folder(tmp_path, "dp1", steps=[9.0, STEP_S, STEP_S])
    assert traceview.load_runs([one]).predictions() == []


def test_no_prediction_from_noisy_runs_and_the_reason_is_given(tmp_path):
    # DP-1 step times 100 µs and 600 µs after the first: 6× apart, noise.
    one = tb.run_folder(tmp_path, "dp1", steps=[9.0, STEP_S, 6 * STEP_S, STEP_S])
    two = tb.run_folder(tmp_path, "dp2", dp=2, steps=[9.0, STEP_S, STEP_S, STEP_S])
    runs = traceview.load_runs([one, two])
    assert runs.predictions() == []
    assert runs.withheld_predictions() == [
        traceview.Withheld(
            strategy="ddp",
            why="its DP-1 run's step times vary 6.0× (noise): nothing to predict from",
        )
    ]


def test_no_prediction_nor_efficiency_from_runs_of_different_threads_per_rank(tmp_path):
    one = tb.run_folder(tmp_path, "dp1", steps=[9.0, STEP_S, STEP_S, STEP_S], threads=4)
    two = tb.run_folder(tmp_path, "dp2", dp=2, steps=[9.0, STEP_S, STEP_S, STEP_S], threads=1)
    runs = traceview.load_runs([one, two])
    assert runs.predictions() == []
    (withheld,) = runs.withheld_predictions()
    assert withheld.why == (
        "its DP-1 run ran 4 intra-op threads per rank and its DP-2 run 1: not like for like"
    )
    dp1, dp2 = runs.scaling()
    assert (dp1.threads_per_rank, dp2.threads_per_rank) == (4, 1)
    assert dp1.efficiency == 1.0 and dp2.efficiency is None
    assert dp2.caveats == (
        "no E(N): its DP-1 run ran 4 intra-op threads per rank and this one 1 "
        "(rerun both with the same --threads)",
    )


def test_the_same_threads_per_rank_compare(tmp_path):
    one = tb.run_folder(tmp_path, "dp1", steps=[9.0, STEP_S, STEP_S, STEP_S], threads=1)
    two = tb.run_folder(tmp_path, "dp2", dp=2, steps=[9.0, STEP_S, STEP_S, STEP_S], threads=1)
    runs = traceview.load_runs([one, two])
    assert runs.withheld_predictions() == [] and len(runs.predictions()) == 3
    assert runs.scaling()[1].efficiency == pytest.approx(1.0)  # same step, twice the batch


def test_a_measured_larger_run_is_checked_against_its_prediction(tmp_path):
    # DP 4 measured at 130 µs a step; predicted from DP 2 (the reference) and DP 1: 117.5 µs
    # (above), E(N) 100 / 117.5 = 0.851; measured E(N) 100 / 130 = 0.769; the error
    # (117.5 - 130) / 130 = -9.615 %.
    one = tb.run_folder(tmp_path, "dp1", steps=[9.0, STEP_S, STEP_S, STEP_S])
    two = tb.run_folder(tmp_path, "dp2", dp=2, steps=[9.0, STEP_S, STEP_S, STEP_S])
    four = tb.run_folder(tmp_path, "dp4", dp=4, steps=[9.0, 130e-6, 130e-6, 130e-6])
    (checked,) = traceview.load_runs([one, two, four]).checked_predictions()
    assert (checked.strategy, checked.dp, checked.from_dp) == ("ddp", 4, 2)
    assert checked.predicted_step_seconds == pytest.approx(117.5e-6)
    assert checked.measured_step_seconds == pytest.approx(130e-6)
    assert checked.predicted_efficiency == pytest.approx(100 / 117.5)
    assert checked.measured_efficiency == pytest.approx(100 / 130)
    assert checked.error_pct == pytest.approx(-9.615385, abs=1e-6)


def test_nothing_is_checked_without_a_smaller_multi_rank_run_or_on_noise(tmp_path):
    one = tb.run_folder(tmp_path, "dp1", steps=[9.0, STEP_S, STEP_S, STEP_S])
    two = tb.run_folder(tmp_path, "dp2", dp=2, steps=[9.0, STEP_S, STEP_S, STEP_S])
    assert traceview.load_runs([one, two]).checked_predictions() == []
    noisy = tb.run_folder(tmp_path, "dp4", dp=4, steps=[9.0, 130e-6, 6 * 130e-6, 130e-6])
    assert traceview.load_runs([one, two, noisy]).checked_predictions() == []


@pytest.mark.cli
def test_compare_gives_the_checked_prediction_in_every_format(tmp_path):
    import csv
    import io
    import json

    from tests.cli.run_cli import traceview as cli

    tb.run_folder(tmp_path, "dp1", steps=[9.0, STEP_S, STEP_S, STEP_S])
    tb.run_folder(tmp_path, "dp2", dp=2, steps=[9.0, STEP_S, STEP_S, STEP_S])
    tb.run_folder(tmp_path, "dp4", dp=4, steps=[9.0, 130e-6, 130e-6, 130e-6])
    table = cli("compare", tmp_path)
    assert (
        "predictions checked against measured runs:\n  ddp DP 4, predicted from DP 2 and DP 1: "
        "step 0.117 ms (E(N) 0.85); measured 0.130 ms (E(N) 0.77): error -10%\n"
    ) in table.out
    doc = json.loads(cli("compare", tmp_path, "--format", "json").out)
    (said,) = doc["predictions_checked"]
    assert (said["dp"], said["from_dp"], round(said["error_pct"], 3)) == (4, 2, -9.615)
    rows = list(csv.DictReader(io.StringIO(cli("compare", tmp_path, "--format", "csv").out)))
    assert [(r["dp"], r["predicted_from_dp"], r["prediction_error_pct"][:6]) for r in rows] == [
        ("1", "", ""), ("2", "", ""), ("4", "2", "-9.615"),
    ]  # fmt: skip


def test_the_prediction_starts_from_the_least_noisy_run_at_multiples_of_the_largest(tmp_path):
    # DP 2's steps are all 100 µs (max ÷ min 1.0); DP 4's vary 120-150 µs (1.25, not noise
    # but noisier): the model is calibrated on DP 2 and predicts at 2×, 4×, 8× DP 4.
    one = tb.run_folder(tmp_path, "dp1", steps=[9.0, STEP_S, STEP_S, STEP_S])
    two = tb.run_folder(tmp_path, "dp2", dp=2, steps=[9.0, STEP_S, STEP_S, STEP_S])
    four = tb.run_folder(tmp_path, "dp4", dp=4, steps=[9.0, 120e-6, 150e-6, 130e-6])
    by = {p.dp: p for p in traceview.load_runs([one, two, four]).predictions()}
    assert sorted(by) == [8, 16, 32]
    # From DP 2 (as above): N=8 comm 35 × 1.75 = 61.25, exposed 31.25, step 126.25 µs.
    assert by[8].step_seconds == pytest.approx(126.25e-6)
