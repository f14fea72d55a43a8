"""An α-β fit of each collective type's duration against its size (duration = α + bytes /
bandwidth, least squares), how much to trust it, and the message size it suggests — with the
advice in words, said the same way wherever it is shown.

Advice is held to what the fit can carry: a size only from three or more clusters of sizes and
a trusted fit, never beyond what a step sends of that collective ("one bucket"), and nothing for
a collective that takes under 1 % of the step; a bandwidth only where the fit is trusted."""

from __future__ import annotations

import msgspec
import numpy as np
import polars as pl

from traceview.analysis.buckets import GRADIENT_COLLECTIVES
from traceview.plain import counted

# Sizes within this ratio of a cluster's smallest count as one size: DDP's buckets differ by a
# few parameters, and a fit through two clusters is a line through two points.
CLUSTER_RATIO = 1.1
MIN_CLUSTERS = 3
TRUSTED_R2 = 0.7  # medium confidence and up: a bandwidth is said, a size suggested
HIGH_R2 = 0.9
MIN_STEP_SHARE = 0.01  # a collective under this share of the step time is not worth resizing


class AlphaBetaFit(msgspec.Struct, frozen=True, kw_only=True):
    """duration = α + bytes / bandwidth, least squares over one collective type's calls."""

    collective: str
    calls: int
    distinct_sizes: int
    size_clusters: int  # distinct sizes, those within 10 % of each other counted once
    alpha_us: float | None  # only where the fit is trusted
    bandwidth_gbps: float | None  # GB/s = bytes per ns; only where the fit is trusted
    r2: float | None
    confidence: str  # "high", "medium", "low"
    why: str
    on: str  # what was fitted: "transfer" times, or whole "duration"s (they include waiting)
    size_for_90pct_bytes: float | None  # where α costs 10 % of the time
    median_bytes: float | None  # of this type's calls with a known size
    step_bytes: float | None  # what a rank sends of this collective per step (median)
    step_share: float | None  # its calls' share of the ranks' step time

    @property
    def trusted(self) -> bool:
        return self.confidence != "low"

    @property
    def one_bucket(self) -> bool:
        """The size reaching 90 % is more than a step sends: one message is as large as it gets."""
        return (
            self.size_for_90pct_bytes is not None
            and self.step_bytes is not None
            and self.size_for_90pct_bytes > self.step_bytes
        )

    @property
    def advice(self) -> str:
        if self.size_for_90pct_bytes is None:
            return f"no recommendation ({self.why}){self._basis}"
        target = self.size_for_90pct_bytes
        unit = "buckets" if self.collective in GRADIENT_COLLECTIVES else "messages"
        text = f"messages of {mebibytes(target)} or more reach 90% of the fitted bandwidth"
        if self.one_bucket and self.step_bytes is not None:
            text += (
                f"; a step sends only {mebibytes(self.step_bytes)} of {self.collective}: "
                f"one bucket of all of it is as large as they get"
            )
        elif self.median_bytes is not None:
            median = f"; the median is {mebibytes(self.median_bytes)}"
            if self.median_bytes < target:
                text += f"{median}: larger {unit} would help"
            else:
                text += f"{median}: larger {unit} would only start communication later"
        return f"{text} (confidence: {self.confidence}: {self.why}){self._basis}"

    @property
    def _basis(self) -> str:
        if self.on == "duration" and self.r2 is not None:  # a line was fitted
            return (
                "; fitted on whole durations, which include waiting for late ranks: α is "
                "overstated, the bandwidth a lower bound"
            )
        return ""


def mebibytes(size: float) -> str:
    """A message size in MiB (the unit of DDP's bucket_cap_mb, which every piece of advice on
    sizes is in), with the digits that matter at its scale."""
    mib = size / 2**20
    return f"{mib:,.0f} MiB" if mib >= 100 else f"{mib:.1f} MiB" if mib >= 1 else f"{mib:.3g} MiB"


def size_clusters(sizes: np.ndarray) -> int:
    """Distinct sizes, those within CLUSTER_RATIO of a cluster's smallest counted once."""
    clusters, start = 0, None
    for size in np.unique(sizes):
        if start is None or size > start * CLUSTER_RATIO:
            clusters, start = clusters + 1, max(float(size), 1.0)
    return clusters


def fit_alpha_beta(
    calls: pl.DataFrame,
    collective: str,
    duration: str = "dur_ns",
    *,
    on: str = "duration",
    step_bytes: float | None = None,
    step_share: float | None = None,
) -> AlphaBetaFit:
    """The fit of `collective`'s calls (`duration`: the column of times fitted, described by
    `on`); `step_bytes` and `step_share` bound the advice (see the module docstring)."""
    sized = calls.filter((pl.col("collective") == collective) & pl.col("bytes").is_not_null())
    median = sized["bytes"].median() if sized.height else None
    rows = sized.filter(pl.col(duration) > 0)
    x = rows["bytes"].to_numpy().astype(float)
    y = rows[duration].to_numpy().astype(float)
    distinct, clusters = len(np.unique(x)), size_clusters(x)
    empty = AlphaBetaFit(
        collective=collective,
        calls=rows.height,
        distinct_sizes=distinct,
        size_clusters=clusters,
        alpha_us=None,
        bandwidth_gbps=None,
        r2=None,
        confidence="low",
        why="",
        on=on,
        size_for_90pct_bytes=None,
        median_bytes=float(median) if median is not None else None,  # type: ignore[arg-type]
        step_bytes=step_bytes,
        step_share=step_share,
    )
    if distinct < 2:
        return msgspec.structs.replace(
            empty, why=f"{counted(distinct, 'distinct message size')}; a fit needs two or more"
        )
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (intercept + slope * x)
    total = ((y - y.mean()) ** 2).sum()
    r2 = float(1.0 - (residual**2).sum() / total if total > 0 else 0.0)
    if slope <= 0:
        return msgspec.structs.replace(
            empty, r2=r2, why="duration does not grow with size in these calls"
        )
    if clusters < MIN_CLUSTERS:
        return msgspec.structs.replace(
            empty,
            r2=r2,
            why=f"{counted(clusters, 'size cluster')} (sizes within 10% counted once): a line "
            f"through them cannot tell latency from bandwidth; it takes {MIN_CLUSTERS} or more",
        )
    spread = float(x.max() / max(x.min(), 1.0))
    if r2 < TRUSTED_R2:
        return msgspec.structs.replace(
            empty, r2=r2, why=f"R² {r2:.2f}: durations vary for reasons other than size"
        )
    high = rows.height >= 6 and spread >= 4 and r2 >= HIGH_R2
    confidence = "high" if high else "medium"
    why = (
        f"{counted(rows.height, 'call')}, {counted(clusters, 'size cluster')} over "
        f"{spread:.0f}×, R² {r2:.2f}"
    )
    alpha_ns = max(float(intercept), 0.0)
    bandwidth = 1.0 / float(slope)  # bytes per ns
    fitted = msgspec.structs.replace(
        empty,
        alpha_us=float(intercept) / 1000.0,
        bandwidth_gbps=bandwidth,
        r2=r2,
        confidence=confidence,
        why=why,
    )
    if alpha_ns <= 0:
        return msgspec.structs.replace(fitted, why=f"{why}; no latency left to amortise")
    if step_share is not None and step_share < MIN_STEP_SHARE:
        return msgspec.structs.replace(
            fitted,
            why=f"{why}; its calls take {100 * step_share:.2g}% of the step time: not worth "
            "resizing",
        )
    return msgspec.structs.replace(fitted, size_for_90pct_bytes=9.0 * alpha_ns * bandwidth)
