"""The overlap tax as the report and the dashboard show it (docs/metrics.md "Overlap tax"): a
row a rank, most taxed first, from the analyze document, and one sentence for the job."""

from __future__ import annotations

import statistics

import polars as pl

from traceview import Job
from traceview.documents import build
from traceview.documents import structs as d
from traceview.documents.words import overlap_tax_said
from traceview.plain import counted

# The rank table's columns: (the frame's column, heading, format); formats for the dashboard.
TAX_COLUMNS = {
    "rank": ("rank", "{:d}"),
    "tax_ms_per_step": ("tax ms a step", "{:,.3f}"),
    "exposed_ms_per_step": ("exposed ms a step", "{:,.3f}"),
    "slowdown": ("slowdown ×", "{:.2f}"),
    "middle_half": ("middle half ×", None),
    "alone": ("alone runs ×", None),
    "pairs": ("launches", "{:,d}"),
    "coverage_pct": ("% of compute beside comm", "{:.0f}"),
    "caveat": ("caveat", None),
}


def _taxes(job: Job) -> list[tuple[int | None, d.OverlapTaxJson]]:
    return [(r.rank, t) for r in job.ranks if (t := build.overlap_tax(r)) is not None]


def tax_frame(job: Job) -> pl.DataFrame:
    """One row a rank whose tax was measured, the most taxed a step first."""
    rows = []
    for rank, t in _taxes(job):
        q = t.slowdown
        exposed = None if t.comm_cost_us is None else (t.comm_cost_us - t.tax_us) / 1e3
        rows.append(
            {
                "rank": rank,
                "tax_ms_per_step": t.tax_per_step_us / 1e3 if t.pairs else None,
                "exposed_ms_per_step": None if exposed is None else exposed / max(t.steps, 1),
                "slowdown": q[1] if q else None,
                "middle_half": f"{q[0]:.2f}–{q[2]:.2f}" if q else None,
                "alone": f"{t.alone[0]:.2f}–{t.alone[2]:.2f}" if t.alone else None,
                "pairs": t.pairs,
                "coverage_pct": t.coverage_pct,
                "caveat": t.caveat,
            }
        )
    schema = {
        "rank": pl.Int64,
        "tax_ms_per_step": pl.Float64,
        "exposed_ms_per_step": pl.Float64,
        "slowdown": pl.Float64,
        "middle_half": pl.String,
        "alone": pl.String,
        "pairs": pl.Int64,
        "coverage_pct": pl.Float64,
        "caveat": pl.String,
    }
    frame = pl.DataFrame(rows, schema=schema)
    return frame.sort("tax_ms_per_step", descending=True, nulls_last=True)


def tax_words(job: Job) -> str | None:
    """The job's tax in a sentence: the one rank's own, or how many ranks measure it and are
    beyond noise; None where no rank can be measured (CPU traces)."""
    taxes = _taxes(job)
    if not taxes:
        return None
    if len(taxes) == 1:
        return overlap_tax_said(taxes[0][1])
    measured = [t for _, t in taxes if t.pairs]
    beyond = [t for t in measured if t.beyond_noise]
    per_step = sorted(t.tax_per_step_us / 1e3 for t in measured)
    if not per_step:
        return f"overlap tax: {taxes[0][1].caveat} (on any of {counted(len(taxes), 'rank')})"
    return (
        f"overlap tax: measured on {len(measured)} of {len(taxes)} ranks, beyond noise on "
        f"{len(beyond)}; {statistics.median(per_step):,.3f} ms a step at the median rank "
        f"({per_step[0]:,.3f}–{per_step[-1]:,.3f} ms). Each rank's figures and caveats are in "
        "the table (docs/metrics.md “Overlap tax”)"
    )
