"""Findings across the DP degrees of one strategy's runs (docs/findings.md): per-rank compute
that changes with the degree — weak scaling holds it constant, and it is often the largest term
— and a prediction that missed its measured run, split into what changed."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import msgspec

from traceview.analysis.finding import Finding
from traceview.analysis.fingerprint import RunKey, run_key
from traceview.analysis.job import JobReport
from traceview.analysis.prediction import CheckedPrediction

# Per-rank compute counts as changed beyond this share of the smallest degree's.
COMPUTE_CHANGE = 0.15
# A prediction missing its measured run by more than this share is a finding.
MISSED = 0.20
PARTS = ("compute", "exposed_comm", "idle")
_SAID = {"compute": "compute", "exposed_comm": "exposed communication", "idle": "idle"}


class PerRankStep(msgspec.Struct, frozen=True, kw_only=True):
    """A run's mean per rank and profiled step, in ns: its compute, exposed communication
    and idle (they and the overlap sum to the step window)."""

    dp: int
    compute: float
    exposed_comm: float
    idle: float
    rank_steps: int


def per_rank_step(job: JobReport) -> PerRankStep | None:
    """None without a run record (no degree) or without profiled steps."""
    rows = [s.breakdown for r in job.ranks for s in r.steps if not s.partial]
    if job.run is None or not rows:
        return None

    def mean(values: Sequence[int | None]) -> float:
        return statistics.fmean(v or 0 for v in values)

    return PerRankStep(
        dp=job.run.world_size,
        compute=mean([b.compute_ns for b in rows]),
        exposed_comm=mean([b.exposed_comm_ns for b in rows]),
        idle=mean([b.idle_ns for b in rows]),
        rank_steps=len(rows),
    )


Named = tuple[str, JobReport]  # a run's name as outputs say it, and its report


def _by_model(jobs: Sequence[Named]) -> dict[RunKey, list[tuple[Named, PerRankStep]]]:
    """The measured runs by strategy and model, by DP degree: like is set against like."""
    out: dict[RunKey, list[tuple[Named, PerRankStep]]] = {}
    for name, job in jobs:
        key = run_key(job)
        if key is not None and (measured := per_rank_step(job)) is not None:
            out.setdefault(key, []).append(((name, job), measured))
    return {k: sorted(runs, key=lambda r: r[1].dp) for k, runs in out.items()}


def compute_changed(jobs: Sequence[Named]) -> list[Finding]:
    """Per strategy with runs at two or more DP degrees: per-rank compute per step that moves
    more than COMPUTE_CHANGE from the smallest degree's — what weak scaling, E(N) and the
    predictions take as constant."""
    out = []
    for (strategy, _), runs in _by_model(jobs).items():
        if len(runs) < 2:
            continue
        base = runs[0][1]
        if not base.compute:
            continue
        moved = [(j, m) for j, m in runs[1:] if abs(m.compute / base.compute - 1) > COMPUTE_CHANGE]
        if not moved:
            continue
        said = ", ".join(
            [f"DP {base.dp} {base.compute / 1e6:,.1f} ms"]
            + [f"DP {m.dp} {m.compute / 1e6:,.1f} ms ({_pct(m.compute, base.compute)})"
               for _, m in runs[1:]]
        )  # fmt: skip
        (name, top_job), top = max(moved, key=lambda r: abs(r[1].compute - base.compute))
        out.append(
            Finding(
                rule="compute_scaling",
                job=name,
                what=(
                    f"{strategy}: per-rank compute per profiled step changes with the DP "
                    f"degree: {said} (mean over {sum(m.rank_steps for _, m in runs)} "
                    "rank-steps) — weak scaling, E(N) and the predictions take it as constant"
                ),
                action=_why_compute_moves(top_job),
                numbers={
                    "strategy": strategy,
                    **{f"compute_ms_dp{m.dp}": round(m.compute / 1e6, 3) for _, m in runs},
                    "largest_change_pct": round(100 * (top.compute / base.compute - 1), 1),
                },
            )
        )
    return out


def _pct(value: float, base: float) -> str:
    return f"{100 * (value / base - 1):+.0f}%"


def _why_compute_moves(job: JobReport) -> str:
    """What makes the same per-rank work take longer at another degree: on CPU ranks, ranks
    sharing cores (said with the run record's threads and CPUs where it has them)."""
    run = job.run
    assert run is not None
    if any(r.mode == "gpu" for r in job.ranks):
        return (
            "the same work per rank took a different time: look at what the GPUs share as "
            "ranks are added (clocks and power limits, host CPUs feeding them, data loading)"
        )
    hosts: dict[str | None, tuple[int, set[int]]] = {}
    for r in run.ranks:
        threads, cpus = hosts.get(r.host, (0, set()))
        hosts[r.host] = (threads + (r.intra_op_threads or 0), cpus | set(r.cpus or ()))
    crowded = [
        f"{threads} intra-op threads on {len(cpus)} CPUs" + (f" of {host}" if host else "")
        for host, (threads, cpus) in hosts.items()
        if cpus and threads > len(cpus)
    ]
    if crowded:
        return (
            f"at DP {run.world_size} the ranks share cores ({'; '.join(crowded)}): give each "
            "rank its own (fewer intra-op threads per rank, or fewer ranks per host) before "
            "reading E(N) or a prediction"
        )
    per_host = [
        f"{sum(1 for r in run.ranks if r.host == host)} ranks on host {host}"
        for host in sorted({r.host for r in run.ranks if r.host})
    ]
    where = (
        f" ({', '.join(per_host)}; the run record does not say their threads or CPUs)"
        if per_host
        else ""
    )
    return (
        f"the same work per rank took a different time at DP {run.world_size}{where}: look at "
        "what the ranks share as they are added (CPU cores, their frequency, memory bandwidth, "
        "data loading)"
    )


def prediction_missed(checked: Sequence[CheckedPrediction], jobs: Sequence[Named]) -> list[Finding]:
    """A measured run the model missed by more than MISSED: from the run it was predicted from
    to it, how each part of the per-rank step changed. The model holds compute as measured and
    scales only communication with the bus factor: a miss is what else changed."""
    models = _by_model(jobs)
    out = []
    for c in checked:
        if abs(c.error_pct) <= 100 * MISSED:
            continue
        # The model whose runs hold both degrees: one, or the runs cannot be told apart.
        held = [
            {m.dp: (named[0], m) for named, m in runs}
            for (strategy, _), runs in models.items()
            if strategy == c.strategy
        ]
        both = [by_dp for by_dp in held if c.from_dp in by_dp and c.dp in by_dp]
        if len(both) != 1:
            continue
        (by_dp,) = both
        (_, before), (name, after) = by_dp[c.from_dp], by_dp[c.dp]
        change = {p: getattr(after, p) - getattr(before, p) for p in PARTS}
        largest = max(PARTS, key=lambda p: abs(change[p]))
        said = ", ".join(
            f"{_SAID[p]} {getattr(before, p) / 1e6:,.1f} → {getattr(after, p) / 1e6:,.1f} ms"
            for p in PARTS
        )
        out.append(
            Finding(
                rule="prediction_missed",
                job=name,
                what=(
                    f"{c.strategy} DP {c.dp}: measured {c.measured_step_seconds * 1e3:,.1f} ms a "
                    f"step against {c.predicted_step_seconds * 1e3:,.1f} predicted from DP "
                    f"{c.from_dp} (error {c.error_pct:+.0f}%); per rank and profiled step from "
                    f"DP {c.from_dp} to DP {c.dp}: {said} — the largest change is "
                    f"{_SAID[largest]}"
                ),
                action=_what_the_model_missed(largest),
                numbers={
                    "strategy": c.strategy,
                    "dp": c.dp,
                    "from_dp": c.from_dp,
                    "error_pct": round(c.error_pct, 1),
                    **{f"{p}_change_ms": round(change[p] / 1e6, 3) for p in PARTS},
                    "largest": largest,
                },
            )
        )
    return out


def _what_the_model_missed(largest: str) -> str:
    if largest == "compute":
        return (
            "the model holds per-rank compute as measured, and it changed (compute_scaling): "
            "make it hold (each rank its own cores or GPU) before trusting a prediction"
        )
    if largest == "exposed_comm":
        return (
            "communication grew beyond its bus factor (how often each byte crosses a link at N "
            "ranks): waiting for late ranks (traceview ranks) "
            "or a link slower at this size or this many ranks (traceview collectives' fits)"
        )
    return "time outside compute and communication grew: host work, data loading, barriers"
