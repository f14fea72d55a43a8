"""The dashboard's charts as one static HTML page, with the charting scripts inline: for
clusters where no server port can be opened and no CDN reached (`traceview report`)."""

from __future__ import annotations

import altair as alt
import polars as pl

from traceview import Runs
from traceview.dashboard import charts
from traceview.dashboard.frames import (
    calls_frame,
    caveat_lines,
    memory_frame,
    overlap_frame,
    prediction_frame,
    scaling_frame,
)


def report_chart(runs: Runs) -> alt.VConcatChart:
    sections: list[charts.AnyChart] = []
    scaling = scaling_frame(runs)
    measured = scaling.filter(pl.col("efficiency").is_not_null()) if scaling.height else scaling
    if measured.height:
        sections += [
            charts.efficiency_chart(measured, prediction_frame(runs)),
            charts.throughput_chart(measured),
            charts.exposed_chart(scaling),
        ]
    caveats = caveat_lines(runs)
    if caveats:
        sections.append(charts.caveats_chart(caveats, "Caveats"))
    for job in runs.jobs:
        overlap = overlap_frame(job)
        if overlap.height:
            sections.append(charts.overlap_chart(overlap).properties(title=f"Overlap · {job.name}"))
        calls = calls_frame(job)
        if calls.height:
            sections.append(
                charts.size_vs_duration_chart(calls).properties(title=f"Collectives · {job.name}")
            )
        memory = memory_frame(job)
        if memory.height:
            sections.append(
                charts.memory_chart(memory).properties(title=f"Model states · {job.name}")
            )
    # Each chart keeps its own scales and legend: strategies, parts and sources are not one domain.
    return (
        alt.vconcat(*sections)
        .resolve_scale(color="independent", x="independent", y="independent")
        .resolve_legend(color="independent")
        .properties(title="traceview report")
    )


def report_html(runs: Runs) -> str:
    return report_chart(runs).to_html(inline=True)
