"""What-if predictions at multiples of a strategy's largest measured DP degree, calibrated on
its least noisy multi-rank run (step times max ÷ min; the larger degree among equals), and
each measured run beside what the same model predicts for it from the run below it. The model is
analysis/whatif.py's, stated wherever it is shown: per-rank compute stays as measured (weak
scaling), communication grows with each collective's bus factor at the measured bandwidth, as
much of it stays hidden as at the reference run, the rest adds to the step.
"""

from __future__ import annotations

import msgspec

from traceview.analysis.fingerprint import RunKey, run_key
from traceview.analysis.job import JobReport
from traceview.analysis.scaling import step_times, threads_per_rank
from traceview.analysis.whatif import calibrate
from traceview.plain import counted


class Prediction(msgspec.Struct, frozen=True, kw_only=True):
    strategy: str
    dp: int
    step_seconds: float
    efficiency: float  # T(1) / T(N), weak scaling


def predict(reference: JobReport, base: JobReport, degrees: list[int]) -> list[Prediction]:
    """`reference`: a measured run of a strategy (N ≥ 2, with collectives); `base`: that
    strategy's DP-1 run."""
    calibration = calibrate(reference, base)
    if calibration is None or calibration.base_step_seconds is None:
        return []
    out = []
    for n in degrees:
        found = calibration.simulate(n)
        assert found.efficiency is not None  # a DP-1 step time is known
        out.append(
            Prediction(
                strategy=calibration.strategy,
                dp=n,
                step_seconds=found.step_seconds,
                efficiency=found.efficiency,
            )
        )
    return out


class Withheld(msgspec.Struct, frozen=True, kw_only=True):
    """A strategy with runs to predict from but no prediction, and why."""

    strategy: str
    why: str


class _Basis(msgspec.Struct, frozen=True):
    strategy: str
    base: JobReport  # its DP-1 run
    reference: JobReport  # the run predicted from: its least noisy multi-rank run
    largest: int  # its largest measured DP degree: predictions are at multiples of it
    why_not: str | None  # why nothing is drawn from them


def _bases(jobs: list[JobReport]) -> list[_Basis]:
    """Per strategy with a DP-1 run and a larger one: what a prediction would rest on, and
    whether it can: not on runs whose step times are noise, nor on runs of different threads
    per rank (their E(N) is not computed either)."""
    out = []
    for (strategy, _), mine in _by_model(jobs).items():
        base = next((j for j in mine if j.run and j.run.world_size == 1), None)
        larger = [j for j in mine if j.run and j.run.world_size > 1]
        if base is None or step_times(base) is None or not larger:
            continue
        ref = min(larger, key=_noise)
        largest = max(j.run.world_size for j in larger if j.run)
        out.append(_Basis(strategy, base, ref, largest, _why_not(base, ref)))
    return out


def _noise(job: JobReport) -> tuple[float, int]:
    """How noisy a run's step times are (max ÷ min), the larger degree first among equals."""
    times = step_times(job)
    spread = times.spread if times is not None else float("inf")
    return round(spread, 2), -(job.run.world_size if job.run else 0)


def _why_not(base: JobReport, ref: JobReport) -> str | None:
    for job in (base, ref):
        times = step_times(job)
        n = job.run.world_size if job.run else "?"
        if times is not None and times.noisy:
            return (
                f"its DP-{n} run's step times vary {times.spread:.1f}× (noise): nothing to "
                "predict from"
            )
    one, top = threads_per_rank(base.run), threads_per_rank(ref.run)
    if one is not None and top is not None and one != top:
        return (
            f"its DP-1 run ran {counted(one, 'intra-op thread')} per rank and its DP-"
            f"{ref.run.world_size if ref.run else '?'} run {top}: not like for like"
        )
    return None


def predict_jobs(jobs: list[JobReport], multiples: tuple[int, ...] = (2, 4, 8)) -> list[Prediction]:
    """Per strategy with a DP-1 run and a larger one, both fit to predict from: predictions at
    multiples of the largest."""
    out: list[Prediction] = []
    for basis in _bases(jobs):
        times = step_times(basis.base)
        if basis.why_not is not None or times is None:
            continue
        out += predict(basis.reference, basis.base, [basis.largest * m for m in multiples])
    return out


def withheld_predictions(jobs: list[JobReport]) -> list[Withheld]:
    """The strategies with runs to predict from that get no prediction, and why."""
    return [Withheld(strategy=b.strategy, why=b.why_not) for b in _bases(jobs) if b.why_not]


class CheckedPrediction(msgspec.Struct, frozen=True, kw_only=True):
    """A measured run beside what the model predicts for it from a smaller run of the same
    strategy (docs/metrics.md "Predictions checked")."""

    strategy: str
    dp: int  # the measured run
    from_dp: int  # the largest smaller run (DP ≥ 2) it is predicted from, with the DP-1 run
    predicted_step_seconds: float
    measured_step_seconds: float
    predicted_efficiency: float
    measured_efficiency: float  # T(1) / T(N), as predicted
    error_pct: float  # (predicted - measured) / measured step time, in %


def checked_predictions(jobs: list[JobReport]) -> list[CheckedPrediction]:
    """Per strategy, each measured run above the smallest multi-rank one, predicted from the
    largest run below it and the DP-1 run (neither noisy, like for like), beside its measured
    step time. Runs whose step times are noise are not checked."""
    out = []
    for (strategy, _), mine in _by_model(jobs).items():
        base = next((j for j in mine if j.run and j.run.world_size == 1), None)
        base_times = step_times(base) if base is not None else None
        if base is None or base_times is None:
            continue
        larger = sorted(
            (j for j in mine if j.run and j.run.world_size > 1),
            key=lambda j: j.run.world_size if j.run else 0,
        )
        for i, target in enumerate(larger[1:], start=1):
            measured = step_times(target)
            reference = larger[i - 1]
            if measured is None or measured.noisy or _why_not(base, reference) is not None:
                continue
            assert target.run is not None and reference.run is not None
            if threads_per_rank(target.run) != threads_per_rank(reference.run):
                continue
            found = predict(reference, base, [target.run.world_size])
            if not found:
                continue
            predicted = found[0]
            out.append(
                CheckedPrediction(
                    strategy=strategy,
                    dp=target.run.world_size,
                    from_dp=reference.run.world_size,
                    predicted_step_seconds=predicted.step_seconds,
                    measured_step_seconds=measured.median_s,
                    predicted_efficiency=predicted.efficiency,
                    measured_efficiency=base_times.median_s / measured.median_s,
                    error_pct=100
                    * (predicted.step_seconds - measured.median_s)
                    / measured.median_s,
                )
            )
    return out


def _by_model(jobs: list[JobReport]) -> dict[RunKey, list[JobReport]]:
    """The runs with a run record by strategy and model (analysis/fingerprint.py): a run is
    predicted from runs of its own model only."""
    out: dict[RunKey, list[JobReport]] = {}
    for job in jobs:
        if (key := run_key(job)) is not None:
            out.setdefault(key, []).append(job)
    return out
