"""Who the ranks waited for, step by step (docs/metrics.md "Stragglers"): the same frame, chart
and words for the dashboard's Overlap page and the report."""

from __future__ import annotations

import math

import altair as alt
import polars as pl

from traceview import Job
from traceview.documents import build
from traceview.documents import structs as d
from traceview.documents.words import stragglers_said
from traceview.presentation.charts import FULL_WIDTH

MAX_POINTS = 2_000  # beyond: runs of consecutive steps, each drawn as its most frequent straggler


def of(job: Job) -> d.Stragglers | None:
    """The job's stragglers by step; None where the ranks are not aligned or no step has
    matched collectives."""
    said = build.stragglers(job.stragglers)
    return said if said is not None and said.per_step else None


def said(stragglers: d.Stragglers) -> str:
    return stragglers_said(stragglers) + " (docs/metrics.md, “Stragglers”)."


def binned_words(per_point: int) -> str:
    if per_point == 1:
        return ""
    return (
        f" Each point stands for {per_point} consecutive steps with a straggler: the rank that "
        "was it most often among them (too many steps to draw one by one)."
    )


def straggler_frame(stragglers: d.Stragglers) -> tuple[pl.DataFrame, int]:
    """(step, rank, steps, wait_pct, caused_ms) per step with a straggler, and how many steps
    each row stands for: 1, or beyond MAX_POINTS rows a run of that many consecutive steps drawn
    as the rank that was its straggler most often (`steps`: in how many of them)."""
    rows = [
        (s.step, s.rank, s.wait_share * 100, s.caused_us / 1000)
        for s in stragglers.per_step
        if s.rank is not None
    ]
    schema = {"step": pl.Int64, "rank": pl.Int64, "wait_pct": pl.Float64, "caused_ms": pl.Float64}
    frame = pl.DataFrame(rows, schema=schema, orient="row").with_columns(steps=pl.lit(1))
    per_point = max(1, math.ceil(frame.height / MAX_POINTS))
    if per_point == 1:
        return frame, 1
    binned = (
        frame.with_columns(bin=pl.int_range(pl.len()) // per_point)
        .group_by("bin", "rank")
        .agg(
            step=pl.col("step").min(),
            steps=pl.len(),
            wait_pct=pl.col("wait_pct").mean(),
            caused_ms=pl.col("caused_ms").mean(),
        )
        .sort(["bin", "steps", "rank"], descending=[False, True, False])
        .group_by("bin", maintain_order=True)
        .first()
    )
    return binned.select("step", "rank", "wait_pct", "caused_ms", "steps"), per_point


def straggler_chart(frame: pl.DataFrame) -> alt.Chart:
    """One point per step: the rank the others waited for, darker the more they waited."""
    return (
        alt.Chart(frame)
        .mark_circle(size=60)
        .encode(
            x=alt.X("step:Q", title="step", axis=alt.Axis(format="d")),
            y=alt.Y("rank:Q", title="rank waited for", axis=alt.Axis(format="d", tickMinStep=1)),
            color=alt.Color(
                "wait_pct:Q",
                title="wait % of the step's collective time",
                scale=alt.Scale(scheme="orangered", domain=[0, 100]),
            ),
            tooltip=[
                alt.Tooltip("step:Q", format="d"),
                alt.Tooltip("rank:Q", format="d", title="rank waited for"),
                alt.Tooltip("wait_pct:Q", format=".0f", title="wait %"),
                alt.Tooltip("caused_ms:Q", format=",.3f", title="others' wait ms"),
                alt.Tooltip("steps:Q", format="d", title="steps"),
            ],
        )
        .properties(**FULL_WIDTH, height=180)
    )
