"""The what-if simulator (docs/metrics.md "What-if"): calibrated on a run, it gives back the run
at the run's own values, and moves as worked out by hand below."""

from __future__ import annotations

import pytest

import traceview
from tests import tracebuild as tb
from traceview.analysis.whatif import Calibration, Traffic

STEP_S = 100e-6


def test_calibrated_on_a_run_it_gives_the_run_back_and_moves_by_hand(tmp_path):
    # tracebuild.gpu_example at DP 2: one 4,000-byte all-reduce of 70 µs in step 1, none in
    # step 2: per step comm 35 µs (the mean of the union), 30 hidden, 5 exposed; 100 µs a step.
    one = tb.run_folder(tmp_path, "dp1", steps=[9.0, STEP_S, STEP_S, STEP_S])
    two = tb.run_folder(tmp_path, "dp2", dp=2, steps=[9.0, STEP_S, STEP_S, STEP_S])
    runs = traceview.load_runs([one, two])
    what = runs.what_if(runs.jobs[1])
    assert what is not None and (what.dp, what.bucket_bytes, what.latency_known) == (2, 4000, False)
    # The bus bandwidth that sends 4,000 bytes in the 70 µs the rank-step spent: f(2) = 1.
    assert what.busbw_gbps == pytest.approx(4000 / 70e-6 / 1e9)
    assert what.hidden_share == pytest.approx(30 / 35)
    at_run = what.simulate(2)
    assert at_run.step_seconds == pytest.approx(STEP_S)
    assert at_run.samples_per_s == pytest.approx(2 * 4 / STEP_S)  # 4 samples per rank
    # DP 4: comm 35 × 1.5 = 52.5 µs; 30 stay hidden; step 100 - 5 + 22.5 = 117.5 µs.
    four = what.simulate(4)
    assert four.step_seconds == pytest.approx(117.5e-6)
    assert four.efficiency == pytest.approx(STEP_S / 117.5e-6)
    assert four.samples_per_s == pytest.approx(4 * 4 / 117.5e-6)
    # Twice the bandwidth: 26.25 µs, all of it hidden: 95 µs. Nothing hidden: 100 - 5 + 35.
    assert what.simulate(4, busbw_gbps=2 * what.busbw_gbps).step_seconds == pytest.approx(95e-6)
    assert what.simulate(2, hidden_share=0).step_seconds == pytest.approx(130e-6)
    # No latency fitted: the bucket size changes nothing.
    assert what.simulate(4, bucket_bytes=1000).step_seconds == pytest.approx(117.5e-6)
    # The predictions drawn beside the runs are the same model's.
    assert {p.dp: p.step_seconds for p in runs.predictions()}[4] == pytest.approx(117.5e-6)


def calibration() -> Calibration:
    # 100 MB of all-reduce a step in four 25 MB buckets, α 100 µs, 2.5 GB/s at DP 2 (factor 1):
    # 4 × (0.1 + 10) ms = 40.4 ms, 3/4 of it hidden (30.3 ms), 10.1 ms exposed; 1 s a step.
    return Calibration(
        strategy="ddp", dp=2, step_seconds=1.0, comm_seconds=0.0404, exposed_seconds=0.0101,
        hidden_share=0.75, samples_per_rank=None, base_step_seconds=None,
        traffic=(Traffic(collective="all_reduce", step_bytes=100e6, message_bytes=25e6,
                         alpha_seconds=1e-4, busbw_gbps=2.5),),
    )  # fmt: skip


@pytest.mark.parametrize(
    "bucket, dp, step",
    [
        (None, 2, 1.0),
        # Two 50 MB buckets: 2 × (0.1 + 20) = 40.2 ms; exposed 40.2 - 30.3 = 9.9 ms.
        (50e6, 2, 1.0 - 0.0101 + 0.0099),
        # A hundred 1 MB buckets: 100 × (0.1 + 0.4) = 50 ms; exposed 19.7 ms.
        (1e6, 2, 1.0 - 0.0101 + 0.0197),
        # DP 8, factor 1.75: 4 × (0.1 + 17.5) = 70.4 ms; exposed 40.1 ms.
        (None, 8, 1.0 - 0.0101 + 0.0401),
    ],
)
def test_buckets_pay_their_latency_once_each(bucket, dp, step):
    found = calibration().simulate(dp, bucket_bytes=bucket)
    assert found.step_seconds == pytest.approx(step)
    assert found.efficiency is None and found.samples_per_s is None  # no DP-1 run, no batch


def test_a_run_without_communication_has_no_what_if(tmp_path):
    one = tb.run_folder(tmp_path, "dp1", steps=[9.0, STEP_S, STEP_S, STEP_S])
    runs = traceview.load_runs([one])
    assert runs.what_if(runs.jobs[0]) is None
