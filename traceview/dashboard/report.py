"""The dashboard's charts as one static HTML page, with the charting scripts inline: for
clusters where no server port can be opened and no CDN reached."""

from __future__ import annotations

import altair as alt
import polars as pl

from traceview.analysis.frames import calls_frame, memory_frame, overlap_frame, scaling_frame
from traceview.analysis.job import JobReport
from traceview.analysis.prediction import predict_jobs
from traceview.dashboard import charts


def report_chart(jobs: list[JobReport]) -> alt.VConcatChart:
    sections: list[charts.AnyChart] = []
    scaling = scaling_frame(jobs)
    measured = scaling.filter(pl.col("efficiency").is_not_null()) if scaling.height else scaling
    if measured.height:
        predicted = predict_jobs(jobs)
        pred = pl.DataFrame([p.__dict__ for p in predicted]) if predicted else None
        sections += [
            charts.efficiency_chart(measured, pred),
            charts.throughput_chart(measured),
            charts.exposed_chart(scaling),
        ]
    caveats = (
        [
            f"{name}: {c}"
            for name, text in scaling.select("job", "caveats").drop_nulls().iter_rows()
            for c in text.split("; ")
        ]
        if scaling.height
        else []
    )
    caveats += [line for job in jobs for line in _rank_caveats(job)]
    if caveats:
        sections.append(charts.caveats_chart(caveats, "Caveats"))
    for job in jobs:
        name = str(job.folder or job.ranks[0].trace)
        overlap = overlap_frame(job)
        if overlap.height:
            sections.append(charts.overlap_chart(overlap).properties(title=f"Overlap · {name}"))
        calls = calls_frame(job)
        if calls.height:
            sections.append(
                charts.size_vs_duration_chart(calls).properties(title=f"Collectives · {name}")
            )
        memory = memory_frame(job)
        if memory.height:
            sections.append(charts.memory_chart(memory).properties(title=f"Model states · {name}"))
    # Each chart keeps its own scales and legend: strategies, parts and sources are not one domain.
    return (
        alt.vconcat(*sections)
        .resolve_scale(color="independent", x="independent", y="independent")
        .resolve_legend(color="independent")
        .properties(title="traceview report")
    )


def _rank_caveats(job: JobReport) -> list[str]:
    """Each caveat note of a job's ranks once, with the ranks it holds for."""
    ranks: dict[str, list[str]] = {}
    for r in job.ranks:
        for note in r.notes:
            if note.caveat:
                ranks.setdefault(note.message, []).append(str(r.rank))
    name = str(job.folder or job.ranks[0].trace)
    return [f"{name} (ranks {', '.join(who)}): {msg}" for msg, who in ranks.items()]


def report_html(jobs: list[JobReport]) -> str:
    return report_chart(jobs).to_html(inline=True)
