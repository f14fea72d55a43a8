"""Collective calls by size when there are too many to draw one by one (a job of 1,024 ranks
makes 100,000s): per collective and message size, how many calls and their durations' median
and range — what the chart of every call would show, in a few hundred marks."""

from __future__ import annotations

import altair as alt
import polars as pl

from traceview.presentation.charts import (
    COLLECTIVE_COLORS,
    FULL_WIDTH,
    AnyChart,
    colors,
    log_axis,
    size_vs_duration_chart,
)

MAX_POINTS = 2_000  # more calls than this are drawn by size, not one by one


def size_spread(calls: pl.DataFrame) -> pl.DataFrame:
    """collective, bytes, mb, size, calls, median_ms, low_ms, high_ms, busbw_gbps (the median)."""
    return (
        calls.drop_nulls(["bytes", "duration_ms"])
        .group_by("collective", "bytes")
        .agg(
            pl.col("mb").first(),
            pl.col("size").first(),
            calls=pl.len(),
            median_ms=pl.col("duration_ms").median(),
            low_ms=pl.col("duration_ms").min(),
            high_ms=pl.col("duration_ms").max(),
            busbw_gbps=pl.col("busbw_gbps").median(),
        )
        .sort("collective", "bytes")
    )


def size_spread_chart(spread: pl.DataFrame) -> AnyChart:
    """Per collective and size: the median duration (a point) and the range (a line)."""
    x = alt.X("mb:Q", **log_axis(spread, "mb", "message MB"))  # type: ignore[arg-type]
    both = pl.concat([spread["low_ms"], spread["high_ms"]]).to_frame("ms")
    axis = log_axis(both, "ms", "duration ms")
    color = alt.Color("collective:N", scale=colors(COLLECTIVE_COLORS, spread["collective"]))
    tooltip: list[str | alt.Tooltip] = [
        "collective",
        alt.Tooltip("size:N", title="size"),
        alt.Tooltip("calls:Q", title="calls", format=","),
        alt.Tooltip("median_ms:Q", title="median ms", format=",.3f"),
        alt.Tooltip("low_ms:Q", title="shortest ms", format=",.3f"),
        alt.Tooltip("high_ms:Q", title="longest ms", format=",.3f"),
        alt.Tooltip("busbw_gbps:Q", title="median bus bandwidth GB/s", format=",.2f"),
    ]
    base = alt.Chart(spread).encode(x=x, color=color, tooltip=tooltip)
    return alt.layer(
        base.mark_rule(strokeWidth=2).encode(y=alt.Y("low_ms:Q", **axis), y2="high_ms:Q"),  # type: ignore[arg-type]
        base.mark_point(filled=True, size=70).encode(y=alt.Y("median_ms:Q", **axis)),  # type: ignore[arg-type]
    ).properties(title="Size vs duration: median and range of every rank's calls", **FULL_WIDTH)


def size_chart(calls: pl.DataFrame) -> AnyChart:
    """Size against duration: every call, or beyond MAX_POINTS calls their spread by size."""
    if calls["mb"].drop_nulls().len() > MAX_POINTS:
        return size_spread_chart(size_spread(calls))
    return size_vs_duration_chart(calls)
