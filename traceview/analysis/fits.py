"""An α-β fit of each collective type's duration against its size (duration = α + bytes /
bandwidth, least squares), how much to trust it, and the message size it suggests — with the
advice in words, said the same way wherever it is shown."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from traceview.analysis.buckets import GRADIENT_COLLECTIVES

MIN_R2_FOR_ADVICE = 0.5


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
    median_bytes: float | None  # of this type's calls with a known size

    @property
    def advice(self) -> str:
        if self.size_for_90pct_bytes is None:
            return f"no recommendation ({self.why})"
        target = self.size_for_90pct_bytes
        unit = "buckets" if self.collective in GRADIENT_COLLECTIVES else "messages"
        text = f"messages of {target / 1e6:,.1f} MB or more reach 90% of the fitted bandwidth"
        if self.median_bytes is not None:
            median = f"; the median is {self.median_bytes / 1e6:,.1f} MB"
            if self.median_bytes < target:
                text += f"{median}: larger {unit} would help"
            else:
                text += f"{median}: larger {unit} would only start communication later"
        return f"{text} (confidence: {self.confidence}: {self.why})"


def fit_alpha_beta(calls: pl.DataFrame, collective: str, duration: str = "dur_ns") -> AlphaBetaFit:
    sized = calls.filter((pl.col("collective") == collective) & pl.col("bytes").is_not_null())
    median = sized["bytes"].median() if sized.height else None
    rows = sized.filter(pl.col(duration) > 0)
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
        median_bytes=float(median) if median is not None else None,  # type: ignore[arg-type]
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
        median_bytes=empty.median_bytes,
    )
