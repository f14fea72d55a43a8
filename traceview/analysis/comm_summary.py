"""What the collective calls add up to: which DDP bucket each all-reduce is, the backward tail,
and an α-β fit of duration against size with the bucket size it suggests."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from traceview.model import Timeline
from traceview.parse.run_record import Bucket

GRADIENT_COLLECTIVES = ("all_reduce", "reduce_scatter")
MIN_R2_FOR_ADVICE = 0.5


def label_buckets(calls: pl.DataFrame, buckets: list[Bucket] | None) -> pl.DataFrame:
    """Add `bucket`: DDP launches its bucket all-reduces in bucket order during backward, so
    the k-th backward all-reduce of a step is bucket k, when the step has exactly one per
    bucket and their sizes match the recorded layout."""
    if not buckets or calls.height == 0:
        return calls.with_columns(bucket=pl.lit(None, pl.Int64))
    sizes = [b.bytes for b in sorted(buckets, key=lambda b: b.index)]
    grads = calls.filter(pl.col("backward") & (pl.col("collective") == "all_reduce"))
    labelled = []
    for _, rows in grads.sort("ready_ns", "start_ns").group_by("rank", "step", maintain_order=True):
        if rows.height == len(sizes) and rows["bytes"].to_list() == sizes:
            labelled.append(
                rows.select("rank", "index", bucket=pl.int_range(pl.len(), dtype=pl.Int64))
            )
    if not labelled:
        return calls.with_columns(bucket=pl.lit(None, pl.Int64))
    return calls.join(pl.concat(labelled), on=["rank", "index"], how="left")


@dataclass(frozen=True, kw_only=True)
class BackwardTail:
    """From the end of the step's backward compute to the end of its last gradient collective."""

    step: int
    backward_end_ns: int
    last_gradient_comm_end_ns: int

    @property
    def tail_ns(self) -> int:
        return max(0, self.last_gradient_comm_end_ns - self.backward_end_ns)


def backward_tails(timeline: Timeline, calls: pl.DataFrame) -> list[BackwardTail]:
    iv = timeline.intervals.filter(pl.col("step").is_not_null())
    compute = (
        iv.filter((pl.col("kind") == "compute") & pl.col("backward"))
        .group_by("step")
        .agg(backward_end_ns=pl.col("end_ns").max())
    )
    grads = (
        calls.filter(pl.col("backward") & pl.col("collective").is_in(GRADIENT_COLLECTIVES))
        .group_by("step")
        .agg(last_gradient_comm_end_ns=pl.col("end_ns").max())
    )
    both = compute.join(grads, on="step").sort("step")
    return [BackwardTail(**row) for row in both.iter_rows(named=True)]


@dataclass(frozen=True, kw_only=True)
class AlphaBetaFit:
    """duration = α + bytes / bandwidth, least squares over one collective type's calls."""

    collective: str
    calls: int
    distinct_sizes: int
    alpha_us: float | None
    bandwidth_gbps: float | None  # GB/s = bytes per ns
    r2: float | None
    confidence: str  # "high", "medium", "low"
    why: str
    size_for_90pct_bytes: float | None  # where α costs 10 % of the time

    def advice(self, current_bytes: float | None) -> str:
        if self.size_for_90pct_bytes is None:
            return f"no recommendation ({self.why})"
        target = self.size_for_90pct_bytes
        unit = "buckets" if self.collective in GRADIENT_COLLECTIVES else "messages"
        text = f"messages of {target / 1e6:,.1f} MB or more reach 90% of the fitted bandwidth"
        if current_bytes is not None:
            median = f"; the median is {current_bytes / 1e6:,.1f} MB"
            if current_bytes < target:
                text += f"{median}: larger {unit} would help"
            else:
                text += f"{median}: larger {unit} would only start communication later"
        return f"{text} (confidence: {self.confidence}: {self.why})"


def fit_alpha_beta(calls: pl.DataFrame, collective: str, duration: str = "dur_ns") -> AlphaBetaFit:
    rows = calls.filter(
        (pl.col("collective") == collective)
        & pl.col("bytes").is_not_null()
        & (pl.col(duration) > 0)
    )
    x = rows["bytes"].to_numpy().astype(float)
    y = rows[duration].to_numpy().astype(float)
    distinct = len(np.unique(x))
    empty = AlphaBetaFit(
        collective=collective,
        calls=rows.height,
        distinct_sizes=distinct,
        alpha_us=None,
        bandwidth_gbps=None,
        r2=None,
        confidence="low",
        why="",
        size_for_90pct_bytes=None,
    )
    if distinct < 2:
        return replace(empty, why=f"{distinct} distinct message size(s); a fit needs two or more")
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (intercept + slope * x)
    total = ((y - y.mean()) ** 2).sum()
    r2 = 1.0 - (residual**2).sum() / total if total > 0 else 0.0
    if slope <= 0:
        return replace(empty, r2=r2, why="duration does not grow with size in these calls")
    spread = x.max() / max(x.min(), 1.0)
    if rows.height >= 6 and distinct >= 3 and spread >= 4 and r2 >= 0.9:
        confidence, why = (
            "high",
            f"{rows.height} calls, {distinct} sizes over {spread:.0f}×, R² {r2:.2f}",
        )
    elif r2 >= 0.7:
        confidence, why = "medium", f"{rows.height} calls, {distinct} sizes, R² {r2:.2f}"
    else:
        confidence, why = "low", f"R² {r2:.2f}: durations vary for reasons other than size"
    alpha_ns = max(intercept, 0.0)
    bandwidth = 1.0 / slope  # bytes per ns
    # Below R² 0.5 size explains too little of the duration to size anything on it.
    advisable = alpha_ns > 0 and r2 >= MIN_R2_FOR_ADVICE
    return AlphaBetaFit(
        collective=collective,
        calls=rows.height,
        distinct_sizes=distinct,
        alpha_us=intercept / 1000.0,
        bandwidth_gbps=bandwidth,
        r2=r2,
        confidence=confidence,
        why=why,
        size_for_90pct_bytes=9.0 * alpha_ns * bandwidth if advisable else None,
    )
