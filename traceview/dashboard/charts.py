"""Altair charts from tidy frames: pure functions, no Streamlit, no I/O."""

from __future__ import annotations

import math

import altair as alt
import polars as pl

AnyChart = alt.Chart | alt.LayerChart | alt.FacetChart

KIND_COLORS = alt.Scale(
    domain=["compute", "comm", "memory", "overlap", "exposed comm"],
    range=["#4c78a8", "#f58518", "#9d9d9d", "#54a24b", "#e45756"],
)
PART_COLORS = alt.Scale(
    domain=["compute only", "overlap", "exposed comm", "idle"],
    range=["#4c78a8", "#54a24b", "#e45756", "#d9d9d9"],
)


def _top(frame: pl.DataFrame | None, column: str) -> float:
    """A little above the column's largest value (0 when there is none)."""
    top = frame[column].max() if frame is not None and frame.height else None
    return 1.05 * float(top) if isinstance(top, int | float) else 0.0


def _efficiency_top(scaling: pl.DataFrame, predicted: pl.DataFrame | None) -> float:
    """The axis fits every point, measured or predicted: E(N) above 1 (flagged) stays visible."""
    return max(1.1, _top(scaling, "efficiency"), _top(predicted, "efficiency"))


def efficiency_chart(scaling: pl.DataFrame, predicted: pl.DataFrame | None = None) -> AnyChart:
    measured = (
        alt.Chart(scaling)
        .mark_line(point=True)
        .encode(
            x=alt.X("dp:O", title="DP degree"),
            y=alt.Y(
                "efficiency:Q",
                title="weak-scaling efficiency E(N)",
                scale=alt.Scale(domain=[0, _efficiency_top(scaling, predicted)]),
            ),
            color=alt.Color("strategy:N"),
            tooltip=[
                "strategy",
                "dp",
                alt.Tooltip("efficiency:Q", format=".2f"),
                alt.Tooltip("samples_per_s:Q", format=",.1f"),
                alt.Tooltip("caveats:N", title="caveat"),
            ],
        )
    )
    layers: list[alt.Chart] = [measured]
    flagged = (
        scaling.filter(pl.col("caveats").is_not_null()) if "caveats" in scaling.columns else None
    )
    if flagged is not None and flagged.height:
        # A figure that is more noise than measurement is ringed, and says why on hover.
        layers.append(
            alt.Chart(flagged)
            .mark_point(shape="circle", size=260, color="#e45756", strokeWidth=2)
            .encode(
                x="dp:O",
                y="efficiency:Q",
                tooltip=["strategy", "dp", alt.Tooltip("caveats:N", title="caveat")],
            )
        )
    if predicted is not None and predicted.height:
        layers.append(
            alt.Chart(predicted)
            .mark_line(strokeDash=[4, 4], point=alt.OverlayMarkDef(shape="diamond"))
            .encode(
                x="dp:O",
                y="efficiency:Q",
                color="strategy:N",
                tooltip=[
                    "strategy",
                    "dp",
                    alt.Tooltip("efficiency:Q", format=".2f"),
                    alt.Tooltip("step_seconds:Q", format=".3f"),
                ],
            )
        )
    return alt.layer(*layers).properties(
        title="Efficiency vs DP degree (dashed: predicted; ringed: noisy, see the caveat)",
        width=480,
    )


def throughput_chart(scaling: pl.DataFrame) -> AnyChart:
    return (
        alt.Chart(scaling)
        .mark_bar()
        .encode(
            x=alt.X("dp:O", title="DP degree"),
            y=alt.Y("samples_per_s:Q", title="samples/s"),
            color="strategy:N",
            xOffset="strategy:N",
            tooltip=[
                "strategy",
                "dp",
                alt.Tooltip("samples_per_s:Q", format=",.1f"),
                alt.Tooltip("tokens_per_s:Q", format=",.0f"),
            ],
        )
        .properties(title="Throughput")
    )


def exposed_chart(scaling: pl.DataFrame) -> AnyChart:
    return (
        alt.Chart(scaling)
        .mark_bar()
        .encode(
            x=alt.X("dp:O", title="DP degree"),
            y=alt.Y(
                "exposed_comm_fraction:Q",
                title="exposed communication / step",
                axis=alt.Axis(format="%"),
            ),
            color="strategy:N",
            xOffset="strategy:N",
            tooltip=["strategy", "dp", alt.Tooltip("exposed_comm_fraction:Q", format=".1%")],
        )
        .properties(title="Exposed communication")
    )


def timeline_chart(frame: pl.DataFrame) -> AnyChart:
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("start_ms:Q", title="ms from the step's start"),
            x2="end_ms:Q",
            y=alt.Y("lane:N", title=None, sort=["overlap", "exposed comm"]),
            row=alt.Row("rank:N", title="rank"),
            color=alt.Color("kind:N", scale=KIND_COLORS),
            tooltip=[
                "rank",
                "lane",
                "kind",
                "name",
                alt.Tooltip("start_ms:Q", format=",.3f"),
                alt.Tooltip("end_ms:Q", format=",.3f"),
            ],
        )
        .resolve_scale(y="independent")  # each rank's panel lists its own lanes only
        .interactive(bind_y=False)
    )


def overlap_chart(frame: pl.DataFrame) -> AnyChart:
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("step:O", title="step"),
            y=alt.Y("ms:Q", title="ms", stack="zero"),
            color=alt.Color("part:N", scale=PART_COLORS, sort=list(PART_COLORS.domain)),
            order=alt.Order("part_order:Q"),
            column=alt.Column("rank:N", title="rank"),
            tooltip=["rank", "step", "part", alt.Tooltip("ms:Q", format=",.3f")],
        )
        .transform_calculate(
            part_order="indexof(['compute only','overlap','exposed comm','idle'], datum.part)"
        )
    )


def bucket_timeline_chart(calls: pl.DataFrame) -> AnyChart:
    base = alt.Chart(calls).encode(y=alt.Y("label:N", title=None, sort=None), row=alt.Row("rank:N"))
    waiting = base.mark_rule(strokeDash=[2, 2]).encode(
        x=alt.X("ready_ms:Q", title="ms"), x2="start_ms:Q"
    )
    running = base.mark_bar().encode(
        x="start_ms:Q",
        x2="end_ms:Q",
        color=alt.Color("collective:N"),
        tooltip=[
            "rank",
            "step",
            "label",
            "collective",
            alt.Tooltip("mb:Q", format=",.2f"),
            alt.Tooltip("duration_ms:Q", format=",.3f"),
            alt.Tooltip("exposed_ms:Q", format=",.3f"),
            alt.Tooltip("busbw_gbps:Q", format=",.2f"),
            alt.Tooltip("bandwidth_from:N", title="bandwidth from"),
        ],
    )
    return alt.layer(waiting, running).properties(title="Ready (dashed) → start → end")


def _decades(values: pl.Series) -> list[float]:
    """Ticks of a log axis: the powers of ten the values span (labelled 0.01, 0.1, 1, 10)."""
    positive = values.drop_nulls().filter(values.drop_nulls() > 0)
    if positive.len() == 0:
        return [1.0]
    low = math.floor(math.log10(float(positive.min())))  # type: ignore[arg-type]
    high = math.ceil(math.log10(float(positive.max())))  # type: ignore[arg-type]
    return [10.0**k for k in range(low, max(high, low + 1) + 1)]


def _log_axis(calls: pl.DataFrame, column: str, title: str) -> dict[str, object]:
    ticks = _decades(calls[column])
    return {
        "title": title,
        "scale": alt.Scale(type="log", domain=[ticks[0], ticks[-1]]),
        "axis": alt.Axis(values=ticks, format="~g", grid=True),
    }


def size_vs_duration_chart(calls: pl.DataFrame) -> AnyChart:
    return (
        alt.Chart(calls)
        .mark_circle(size=60)
        .encode(
            x=alt.X("mb:Q", **_log_axis(calls, "mb", "message MB")),  # type: ignore[arg-type]
            y=alt.Y("duration_ms:Q", **_log_axis(calls, "duration_ms", "duration ms")),  # type: ignore[arg-type]
            color="collective:N",
            tooltip=[
                "rank",
                "step",
                "label",
                alt.Tooltip("mb:Q", format=",.2f"),
                alt.Tooltip("duration_ms:Q", format=",.3f"),
                alt.Tooltip("busbw_gbps:Q", format=",.2f"),
                alt.Tooltip("bandwidth_from:N", title="bandwidth from"),
            ],
        )
        .properties(title="Size vs duration")
    )


MEMORY_SOURCES = alt.Scale(
    domain=["measured_mb", "theory_mb", "as_run_mb"], range=["#4c78a8", "#bab0ac", "#72b7b2"]
)


def memory_chart(frame: pl.DataFrame) -> AnyChart:
    long = frame.unpivot(
        index=["rank", "category"],
        on=["measured_mb", "theory_mb", "as_run_mb"],
        variable_name="source",
        value_name="mb",
    ).drop_nulls("mb")
    bars = (
        alt.Chart(long)
        .mark_bar()
        .encode(
            x=alt.X("category:N", title=None),
            xOffset="source:N",
            y=alt.Y("mb:Q", title="MB"),
            color=alt.Color("source:N", scale=MEMORY_SOURCES),
            column=alt.Column("rank:N", title="rank"),
            tooltip=["rank", "category", "source", alt.Tooltip("mb:Q", format=",.2f")],
        )
    )
    return bars
