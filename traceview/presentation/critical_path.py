"""The critical path across ranks (docs/metrics.md "Critical path"): the same frames, charts and
words for the dashboard's Overlap page and the report."""

from __future__ import annotations

import html

import altair as alt
import polars as pl

from traceview import Job
from traceview.documents.critical_path import job_path
from traceview.documents.path_structs import JobPath, StepPath
from traceview.plain import counted, noun
from traceview.presentation.charts import FULL_WIDTH, ROW_PX, colors

# The walk reads every rank's intervals: beyond this many ranks the pages leave it to the
# command (`traceview critical-path`), which reads them a few ranks at a time.
MAX_RANKS = 64
CATEGORY_COLORS = {
    "compute": "#4c78a8",
    "memory": "#9d9d9d",
    "transfer": "#b35806",
    "waiting": "#fdd49e",
    "unmatched": "#f58518",
    "host launch": "#b279a2",
    "idle": "#d9d9d9",
}


def of(job: Job) -> JobPath | str | None:
    """The job's path; words where the pages do not walk it; None below two ranks."""
    ranks = sum(1 for r in job.ranks if r.rank is not None)
    if ranks < 2:
        return None
    if ranks > MAX_RANKS:
        return (
            f"{ranks} ranks: more than the pages walk ({MAX_RANKS}); `traceview critical-path` "
            "gives the path, reading the ranks a few at a time"
        )
    return job_path(job, None)


def said(path: JobPath) -> str:
    """What the path says, in words: where the steps' time went, and how often it crossed."""
    if not path.found:
        return f"No critical path: {path.reason}."
    top = path.totals[:3]
    parts = ", ".join(f"rank {p.rank}'s {p.category} {100 * p.share:.0f} %" for p in top)
    crossings = sorted(s.crossings for s in path.steps)
    median = crossings[len(crossings) // 2]
    ranks_on = sorted({p.rank for p in path.totals})
    words = (
        f"Over {counted(len(path.steps), 'step')}, the chain of work that set each step's end "
        f"spent {parts} of the steps' time; it ran on {noun(len(ranks_on), 'rank')} "
        f"{', '.join(map(str, ranks_on))} and "
        f"moved between ranks {median} {noun(median, 'time')} per step (median)"
    )
    notes = [path.reason] if path.reason else []
    notes += path.caveats
    return (
        words
        + "".join(f". {n[0].upper()}{n[1:]}" for n in notes)
        + " (docs/metrics.md, “Critical path”)."
    )


def totals_frame(path: JobPath) -> pl.DataFrame:
    """(rank, category, ms, share) over every step's path."""
    rows = [(p.rank, p.category, p.us / 1000, 100 * p.share) for p in path.totals]
    schema = {"rank": pl.Int64, "category": pl.String, "ms": pl.Float64, "pct": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def totals_chart(frame: pl.DataFrame) -> alt.Chart:
    """A bar per rank on the path: its share of the steps' time, by category."""
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            y=alt.Y("rank:O", title="rank"),
            x=alt.X("pct:Q", title="% of the steps' time on the critical path", stack=True),
            color=alt.Color("category:N", scale=colors(CATEGORY_COLORS, frame["category"])),
            tooltip=[
                alt.Tooltip("rank:O"),
                "category",
                alt.Tooltip("ms:Q", format=",.3f"),
                alt.Tooltip("pct:Q", format=".1f", title="%"),
            ],
        )
        .properties(**FULL_WIDTH, height=ROW_PX * max(2, frame["rank"].n_unique()))
    )


def slowest(path: JobPath) -> StepPath:
    return max(path.steps, key=lambda s: (s.step_us, -s.step))


def step_frame(step: StepPath) -> pl.DataFrame:
    """One step's segments: rank, category, from/to ms after the step's start, collective."""
    rows = [
        (g.rank, g.category, g.at_us / 1000, (g.at_us + g.us) / 1000, g.us / 1000, g.collective)
        for g in step.segments
    ]
    schema = {"rank": pl.Int64, "category": pl.String, "from_ms": pl.Float64,
              "to_ms": pl.Float64, "ms": pl.Float64, "collective": pl.String}  # fmt: skip
    return pl.DataFrame(rows, schema=schema, orient="row")


def step_chart(frame: pl.DataFrame) -> alt.Chart:
    """The path of one step across the ranks: where it ran, when, doing what."""
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("from_ms:Q", title="ms from the step's start (first rank)"),
            x2="to_ms:Q",
            y=alt.Y("rank:O", title="rank"),
            color=alt.Color("category:N", scale=colors(CATEGORY_COLORS, frame["category"])),
            tooltip=[
                alt.Tooltip("rank:O"),
                "category",
                alt.Tooltip("from_ms:Q", format=",.3f", title="from ms"),
                alt.Tooltip("ms:Q", format=",.3f"),
                "collective",
            ],
        )
        .properties(**FULL_WIDTH, height=ROW_PX * max(2, frame["rank"].n_unique()))
    )


def report_parts(job: Job) -> list[str | alt.Chart]:
    """The report's section: a heading, the words, the totals by rank and the slowest step's
    path (HTML text, escaped, or charts), in order; none below two ranks."""
    path = of(job)
    if path is None:
        return []
    parts: list[str | alt.Chart] = ["<h3>What set each step's end: the critical path</h3>"]
    if isinstance(path, str):
        return [*parts, f"<p>{html.escape(path)}.</p>"]
    parts.append(f"<p>{html.escape(said(path))}</p>")
    if not path.found:
        return parts
    parts.append(totals_chart(totals_frame(path)))
    step = slowest(path)
    parts.append(
        f"<p class=meta>The slowest step, {step.step} ({step.step_us / 1000:,.3f} ms from the "
        "first rank's start to the last rank's end): the path rank by rank "
        "(<code>traceview critical-path --steps N</code> for another).</p>"
    )
    parts.append(step_chart(step_frame(step)))
    return parts
