"""Across runs: throughput and weak-scaling efficiency against the DP degree, exposed
communication, communication volume and model-state memory, each beside the theory."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

import polars as pl

from traceview.analysis import theory
from traceview.analysis.job import JobReport

FP32_BYTES = 4


@dataclass(frozen=True, kw_only=True)
class ScalingRow:
    job: str
    strategy: str  # "unknown" for traces without a run record
    dp: int | None
    step_seconds: float | None  # run record (unprofiled), else the traces' mean step window
    samples_per_s: float | None
    tokens_per_s: float | None
    efficiency: (
        float | None
    )  # E(N) = throughput(N) / (N × throughput(1)); T(1)/T(N) without records
    exposed_comm_fraction: float | None  # exposed communication ÷ step window, over ranks and steps
    comm_volume_psi: float | None  # bytes sent per step per rank ÷ (Ψ × 4 bytes)
    comm_volume_theory_psi: float | None
    model_state_bytes: int | None  # the largest rank's params + grads + optimizer
    model_state_theory_bytes: float | None  # fp32 AdamW formula


def _mean_step_seconds(job: JobReport) -> float | None:
    lengths = [s.breakdown.window_ns for r in job.ranks for s in r.steps]
    return statistics.fmean(lengths) / 1e9 if lengths else None


def _exposed_fraction(job: JobReport) -> float | None:
    steps = [s.breakdown for r in job.ranks for s in r.steps]
    window = sum(b.window_ns for b in steps)
    return sum(b.exposed_comm_ns for b in steps) / window if window else None


def _volume_psi(job: JobReport, psi: int | None) -> float | None:
    calls = job.calls
    if not psi:
        return None
    if calls.height == 0:
        return 0.0 if any(r.steps for r in job.ranks) else None  # e.g. FSDP at DP 1
    if calls["bytes"].null_count() == calls.height:
        return None
    per_rank_step = (
        calls.filter(pl.col("step").is_not_null())
        .group_by("rank", "step")
        .agg(pl.col("bytes").sum())
    )
    if per_rank_step.height == 0:
        return None
    return float(per_rank_step["bytes"].mean()) / (psi * FP32_BYTES)  # type: ignore[arg-type]


def scaling_rows(jobs: list[JobReport]) -> list[ScalingRow]:
    rows = []
    for job in jobs:
        run = job.run
        dp = (
            run.world_size if run else next((r.world_size for r in job.ranks if r.world_size), None)
        )
        strategy = run.strategy if run else "unknown"
        tput = run.throughput if run else None
        psi = run.num_params if run else None
        states = [sum(r.model_state_bytes.values()) for r in run.ranks] if run else []
        formula = theory.model_state_bytes(strategy, psi, dp) if psi and dp else None
        rows.append(
            ScalingRow(
                job=str(job.folder or job.ranks[0].trace),
                strategy=strategy,
                dp=dp,
                step_seconds=tput.step_seconds if tput else _mean_step_seconds(job),
                samples_per_s=tput.samples_per_s if tput else None,
                tokens_per_s=tput.tokens_per_s if tput else None,
                efficiency=None,
                exposed_comm_fraction=_exposed_fraction(job),
                comm_volume_psi=_volume_psi(job, psi),
                comm_volume_theory_psi=theory.VOLUME_PSI.get(strategy),
                model_state_bytes=max(states) if states else None,
                model_state_theory_bytes=sum(formula.values()) if formula else None,
            )
        )
    return _with_efficiency(rows)


def _with_efficiency(rows: list[ScalingRow]) -> list[ScalingRow]:
    """E(N) against the same strategy's DP-1 run among the inputs (weak scaling: the per-rank
    batch is the same at every N). Without throughput, T(1)/T(N) from step times."""
    out = []
    for row in rows:
        base = next((r for r in rows if r.strategy == row.strategy and r.dp == 1), None)
        eff = None
        if base is not None and row.dp:
            if row.samples_per_s and base.samples_per_s:
                eff = row.samples_per_s / (row.dp * base.samples_per_s)
            elif row.step_seconds and base.step_seconds:
                eff = base.step_seconds / row.step_seconds
        out.append(replace(row, efficiency=eff))
    return sorted(out, key=lambda r: (r.strategy, r.dp or 0))
