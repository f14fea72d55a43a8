"""Altair charts from tidy frames: pure functions, no Streamlit, no I/O."""

from __future__ import annotations

import math

import altair as alt
import polars as pl

from traceview.presentation.frames import rank_words
from traceview.presentation.lanes import COLLECTIVE, TRANSFER, WAITING

QUEUED = "queued"  # a call launched, not yet started

AnyChart = alt.Chart | alt.LayerChart | alt.FacetChart

# One colour per kind of work, per strategy and per collective, in every chart of the dashboard
# and the report; only what a chart holds is in its legend.
KIND_COLORS = {
    "compute": "#4c78a8",
    "comm": "#f58518",
    "memory": "#9d9d9d",
    "overlap": "#54a24b",
    "exposed comm": "#e45756",
    COLLECTIVE: "#f58518",
    WAITING: "#fdd49e",
    TRANSFER: "#b35806",
    QUEUED: "#e0e0e0",
}
PART_COLORS = {
    "compute only": "#4c78a8",
    "overlap": "#54a24b",
    "exposed comm": "#e45756",
    "idle": "#d9d9d9",
}
STRATEGY_COLORS = {
    "ddp": "#4c78a8",
    "zero1": "#b279a2",
    "zero2": "#9d755d",
    "zero3": "#54a24b",
}
COLLECTIVE_COLORS = {
    "all_reduce": "#f58518",
    "reduce_scatter": "#e45756",
    "all_gather": "#4c78a8",
    "broadcast": "#72b7b2",
    "all_to_all": "#b279a2",
    "reduce": "#9d755d",
    "barrier": "#9d9d9d",
    "send": "#eeca3b",
    "recv": "#ff9da6",
    "send_recv": "#bab0ac",
}
MEMORY_COLORS = {"measured": "#4c78a8", "ZeRO theory": "#bab0ac", "as run": "#72b7b2"}
_MORE = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"]
ROW_PX = 22  # one lane or bar of a horizontal chart
# As wide as the page; the height is the plot's own (Streamlit's default, fit, squeezes the
# plot into the height given, axes and title included).
FULL_WIDTH = {
    "width": "container",
    "autosize": alt.AutoSizeParams(type="fit-x", contains="padding"),
}
NAME_AXIS = alt.Axis(labelLimit=260, labelOverlap=False)  # then "…"; whole in the tooltip


def colors(known: dict[str, str], values: pl.Series) -> alt.Scale:
    """The fixed colours of the values a chart holds, in the fixed order; a value no table
    names gets a colour of its own after them."""
    present = set(values.drop_nulls().cast(pl.String).to_list())
    domain = [v for v in known if v in present] + sorted(present - set(known))
    spare = iter(_MORE * (1 + len(domain) // len(_MORE)))
    return alt.Scale(domain=domain, range=[known.get(v) or next(spare) for v in domain])


def _strategy(frame: pl.DataFrame) -> alt.Color:
    return alt.Color("strategy:N", scale=colors(STRATEGY_COLORS, frame["strategy"]))


def _top(frame: pl.DataFrame | None, column: str) -> float:
    """A little above the column's largest value (0 when there is none)."""
    top = frame[column].max() if frame is not None and frame.height else None
    return 1.05 * float(top) if isinstance(top, int | float) else 0.0


def _efficiency_top(scaling: pl.DataFrame, predicted: pl.DataFrame | None) -> float:
    """The axis fits every point, measured or predicted: E(N) above 1 (flagged) stays visible."""
    return max(1.1, _top(scaling, "efficiency"), _top(predicted, "efficiency"))


def efficiency_chart(scaling: pl.DataFrame, predicted: pl.DataFrame | None = None) -> AnyChart:
    both = (
        scaling["strategy"]
        if predicted is None
        else pl.concat([scaling["strategy"], predicted["strategy"]])
    )
    color = alt.Color("strategy:N", scale=colors(STRATEGY_COLORS, both))
    measured = (
        alt.Chart(scaling)
        .mark_line(point=True)
        .encode(
            x=alt.X("dp:O", title="DP degree"),
            y=alt.Y(
                "efficiency:Q",
                title="weak-scaling efficiency E(N)",
                scale=alt.Scale(domain=[0, _efficiency_top(scaling, predicted)]),
                axis=alt.Axis(format=".2~f"),
            ),
            color=color,
            tooltip=[
                "strategy",
                alt.Tooltip("dp", title="DP"),
                alt.Tooltip("efficiency:Q", title="E(N)", format=".2f"),
                alt.Tooltip("samples_per_s:Q", title="samples/s", format=",.1f"),
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
                tooltip=[
                    "strategy",
                    alt.Tooltip("dp", title="DP"),
                    alt.Tooltip("caveats:N", title="caveat"),
                ],
            )
        )
    if predicted is not None and predicted.height:
        layers.append(
            alt.Chart(predicted)
            .mark_line(strokeDash=[4, 4], point=alt.OverlayMarkDef(shape="diamond"))
            .encode(
                x="dp:O",
                y="efficiency:Q",
                color=color,
                tooltip=[
                    "strategy",
                    alt.Tooltip("dp", title="DP"),
                    alt.Tooltip("efficiency:Q", title="E(N) predicted", format=".2f"),
                    alt.Tooltip("step_seconds:Q", title="step s predicted", format=".3f"),
                ],
            )
        )
    return alt.layer(*layers).properties(
        title="Efficiency vs DP degree (dashed: predicted; ringed: noisy, see the caveat)",
        **FULL_WIDTH,
    )


def _per_run_bars(
    scaling: pl.DataFrame, field: str, title: str, axis: alt.Axis, by_run: bool = False
) -> AnyChart:
    """A bar per run: grouped by DP degree, or (`by_run`: runs of no sweep) one per run named,
    in DP order."""
    if by_run:
        order = scaling.sort("dp", "job", nulls_last=True)["job"].to_list()
        x, offset = alt.X("job:N", title="run", sort=order, axis=alt.Axis(labelAngle=-30)), {}
    else:
        scaling = scaling.filter(pl.col("dp").is_not_null())
        x, offset = alt.X("dp:O", title="DP degree"), {"xOffset": "strategy:N"}
    return (
        alt.Chart(scaling)
        .mark_bar()
        .encode(
            x=x,
            y=alt.Y(f"{field}:Q", title=title, axis=axis),
            color=_strategy(scaling),
            tooltip=[
                alt.Tooltip("job:N", title="run"),
                "strategy",
                alt.Tooltip("dp", title="DP"),
                alt.Tooltip(f"{field}:Q", title=title, format=axis.format or ",.3f"),
            ],
            **offset,
        )
        .properties(**FULL_WIDTH)
    )


def throughput_chart(scaling: pl.DataFrame) -> AnyChart:
    return _per_run_bars(scaling, "samples_per_s", "samples/s", alt.Axis(format=",.1f")).properties(
        title="Throughput"
    )


def step_time_chart(scaling: pl.DataFrame) -> AnyChart:
    """Each run's median step: what traces alone give, with no run record."""
    chart = _per_run_bars(
        scaling, "step_seconds", "step s (median)", alt.Axis(format=",.3f"), by_run=True
    )
    return chart.properties(title="Median step")


def exposed_chart(scaling: pl.DataFrame, by_run: bool = False) -> AnyChart:
    return _per_run_bars(
        scaling,
        "exposed_comm_fraction",
        "exposed communication / step",
        alt.Axis(format="%"),
        by_run=by_run,
    ).properties(title="Exposed communication")


def _height(frame: pl.DataFrame, column: str) -> int:
    return ROW_PX * max(1, frame[column].n_unique())


def timeline_chart(frame: pl.DataFrame, rows: list[str]) -> AnyChart:
    """One step's lanes, every rank's under its name (`lanes.timeline_frame`, top to bottom
    in `rows`), as wide as the page."""
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("start_ms:Q", title="ms from the step's start"),
            x2="end_ms:Q",
            y=alt.Y("row:N", title=None, sort=rows, axis=NAME_AXIS),
            color=alt.Color("kind:N", title="work", scale=colors(KIND_COLORS, frame["kind"])),
            tooltip=[
                alt.Tooltip("row:N", title="lane"),
                alt.Tooltip("lane:N", title="in the trace"),
                "kind",
                "name",
                alt.Tooltip("start_ms:Q", title="start ms", format=",.3f"),
                alt.Tooltip("end_ms:Q", title="end ms", format=",.3f"),
            ],
        )
        .properties(**FULL_WIDTH, height=ROW_PX * max(1, len(rows)))
        .interactive(bind_y=False)
    )


def overlap_chart(frame: pl.DataFrame) -> AnyChart:
    """A bar per rank and step (or run of steps: overview.binned_steps) in four parts."""
    step = "steps" if "steps" in frame.columns else "step"
    labelled = frame.with_columns(
        bar=pl.format("{} · step {}", rank_words(), pl.col(step)),
        part_order=pl.col("part").replace_strict(
            {p: i for i, p in enumerate(PART_COLORS)}, return_dtype=pl.Int64
        ),
    )
    order = labelled.sort(pl.col("rank").is_null(), "rank", "step")["bar"].unique(
        maintain_order=True
    )
    return (
        alt.Chart(labelled)
        .mark_bar()
        .encode(
            y=alt.Y("bar:N", title=None, sort=order.to_list(), axis=NAME_AXIS),
            x=alt.X("ms:Q", title="ms of the step's window", stack="zero"),
            color=alt.Color("part:N", title="part", scale=colors(PART_COLORS, labelled["part"])),
            order=alt.Order("part_order:Q"),
            tooltip=[
                alt.Tooltip("bar:N", title="rank and step"),
                "part",
                alt.Tooltip("ms:Q", format=",.3f"),
            ],
        )
        .properties(**FULL_WIDTH, height=_height(labelled, "bar"))
    )


def bucket_timeline_chart(calls: pl.DataFrame) -> AnyChart:
    """Each call of a step on its rank's row: queued from its launch (ready) to its start, then
    waiting for the last rank and transfer where the ranks are aligned (else one bar)."""
    rows = calls.with_columns(
        row=pl.format("{} · {}", rank_words(), pl.col("label")),
        arrived_ms=pl.min_horizontal(
            pl.col("end_ms"), pl.col("start_ms") + pl.col("wait_us").fill_null(0) / 1e3
        ),
    )
    order = rows.sort(pl.col("rank").is_null(), "rank", "start_ms")["row"].unique(
        maintain_order=True
    )
    aligned = pl.col("wait_us").is_not_null()
    pieces = pl.concat(
        [
            rows.with_columns(part=pl.lit(QUEUED), x=pl.col("ready_ms"), x2=pl.col("start_ms")),
            rows.filter(aligned).with_columns(
                part=pl.lit(WAITING), x=pl.col("start_ms"), x2=pl.col("arrived_ms")
            ),
            rows.filter(aligned).with_columns(
                part=pl.lit(TRANSFER), x=pl.col("arrived_ms"), x2=pl.col("end_ms")
            ),
            rows.filter(~aligned).with_columns(
                part=pl.lit(COLLECTIVE), x=pl.col("start_ms"), x2=pl.col("end_ms")
            ),
        ]
    ).filter(pl.col("x2") > pl.col("x"))
    return (
        alt.Chart(pieces)
        .mark_bar()
        .encode(
            y=alt.Y("row:N", title=None, sort=order.to_list(), axis=NAME_AXIS),
            x=alt.X("x:Q", title="ms from the first call's launch"),
            x2="x2:Q",
            color=alt.Color("part:N", title="part", scale=colors(KIND_COLORS, pieces["part"])),
            tooltip=[
                alt.Tooltip("row:N", title="call"),
                "collective",
                "part",
                alt.Tooltip("size:N", title="size"),
                alt.Tooltip("duration_ms:Q", title="duration ms", format=",.3f"),
                alt.Tooltip("wait_ms:Q", title="waiting ms", format=",.3f"),
                alt.Tooltip("exposed_ms:Q", title="exposed ms", format=",.3f"),
                alt.Tooltip("busbw_gbps:Q", title="bus bandwidth GB/s", format=",.2f"),
                alt.Tooltip("bandwidth_from:N", title="bandwidth from"),
            ],
        )
        .properties(
            title="One step's collectives: queued → waiting for peers → transfer",
            **FULL_WIDTH,
            height=_height(rows, "row"),
        )
    )


def _decades(values: pl.Series) -> list[float]:
    """Ticks of a log axis: the powers of ten the values span (labelled 0.01, 0.1, 1, 10)."""
    positive = values.drop_nulls().filter(values.drop_nulls() > 0)
    if positive.len() == 0:
        return [1.0]
    low = math.floor(math.log10(float(positive.min())))  # type: ignore[arg-type]
    high = math.ceil(math.log10(float(positive.max())))  # type: ignore[arg-type]
    return [10.0**k for k in range(low, max(high, low + 1) + 1)]


def log_axis(calls: pl.DataFrame, column: str, title: str) -> dict[str, object]:
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
            x=alt.X("mb:Q", **log_axis(calls, "mb", "message MB")),  # type: ignore[arg-type]
            y=alt.Y("duration_ms:Q", **log_axis(calls, "duration_ms", "duration ms")),  # type: ignore[arg-type]
            color=alt.Color("collective:N", scale=colors(COLLECTIVE_COLORS, calls["collective"])),
            tooltip=[
                "rank",
                "step",
                alt.Tooltip("label", title="bucket or module"),
                alt.Tooltip("size:N", title="size"),
                alt.Tooltip("duration_ms:Q", title="duration ms", format=",.3f"),
                alt.Tooltip("busbw_gbps:Q", title="bus bandwidth GB/s", format=",.2f"),
                alt.Tooltip("bandwidth_from:N", title="bandwidth from"),
            ],
        )
        .properties(title="Size vs duration", **FULL_WIDTH)
    )


def memory_chart(frame: pl.DataFrame, unit: tuple[str, float] = ("MB", 1e6)) -> AnyChart:
    """Per rank and category: measured beside the ZeRO theory (and the layout as run), in one
    unit, as wide as the page."""
    name, scale = unit
    sources = {"measured_mb": "measured", "theory_mb": "ZeRO theory", "as_run_mb": "as run"}
    long = (
        frame.unpivot(
            index=["rank", "category"], on=list(sources), variable_name="source", value_name="mb"
        )
        .drop_nulls("mb")
        .with_columns(
            source=pl.col("source").replace_strict(sources),
            size=pl.col("mb") * 1e6 / scale,
            bar=pl.format("{} · {}", rank_words(), pl.col("category")),
        )
    )
    order = long.sort(pl.col("rank").is_null(), "rank")["bar"].unique(maintain_order=True)
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            y=alt.Y("bar:N", title=None, sort=order.to_list(), axis=NAME_AXIS),
            yOffset=alt.YOffset("source:N", sort=list(MEMORY_COLORS)),
            x=alt.X("size:Q", title=f"{name} per rank"),
            color=alt.Color("source:N", title="bytes", scale=colors(MEMORY_COLORS, long["source"])),
            tooltip=[
                alt.Tooltip("bar:N", title="rank and state"),
                "source",
                alt.Tooltip("size:Q", title=name, format=",.2f"),
            ],
        )
        .properties(**FULL_WIDTH, height=_height(long, "bar") * long["source"].n_unique())
    )
