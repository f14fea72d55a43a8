"""What the renderers share: one JSON envelope, the rows of a rank's table, the calls of a job
in the units every format shows (µs), and a job's heading."""

from __future__ import annotations

from typing import Any

import polars as pl

from traceview import __version__
from traceview.analysis import Breakdown, RankReport
from traceview.analysis.findings import Finding
from traceview.cli.steps import StepSelection
from traceview.loader import Job

# The JSON documents of every command (README "Output"): keys are only ever added within one
# version; a change to existing keys raises it.
SCHEMA_VERSION = 1
PARTIAL = " (partial)"  # after the step of a trace cut short that may be missing work

CALL_COLUMNS = [
    "rank",
    "step",
    "index",
    "collective",
    "label",
    "pg",
    "seq",
    "group_size",
    "backward",
    "ready_us",
    "start_us",
    "end_us",
    "queue_us",
    "duration_us",
    "wait_us",
    "transfer_us",
    "bytes",
    "elements",
    "algbw_gbps",
    "busbw_gbps",
    "bandwidth_on",
    "exposed_us",
]


def envelope(command: str, **payload: Any) -> dict[str, Any]:
    return {
        "traceview_version": __version__,
        "schema_version": SCHEMA_VERSION,
        "command": command,
        **payload,
    }


def us(ns: int | None) -> float | None:
    return None if ns is None else ns / 1000.0


def rank_rows(
    r: RankReport, steps: StepSelection | None, before: str, partial: str = ""
) -> list[tuple[str, Breakdown]]:
    """(label, breakdown) per row of one rank: before the first step, each step, the total."""
    rows: list[tuple[str, Breakdown]] = []
    if r.before_first_step is not None and steps is None:
        rows.append((before, r.before_first_step.breakdown))
    rows += [
        (f"{s.step}{partial if s.partial else ''}", s.breakdown)
        for s in r.steps
        if steps is None or s.step in steps
    ]
    if r.total:
        rows.append(("total", r.total))
    return rows


def caveats(r: RankReport) -> str:
    """The rank's notes that say a figure may mislead (input lost first), on one line."""
    return " | ".join(
        [n.message for n in r.notes if n.lossy] + [n.message for n in r.notes if n.caveat]
    )


def call_rows(job: Job, steps: StepSelection | None) -> pl.DataFrame:
    """The job's calls (of the steps asked for) in CALL_COLUMNS: times in µs."""
    calls = job.calls if steps is None else job.calls.filter(steps.expr("step"))
    times = ("ready", "start", "end", "queue", "wait", "transfer", "exposed")
    return calls.with_columns(
        duration_us=pl.col("dur_ns") / 1000, **{f"{c}_us": pl.col(f"{c}_ns") / 1000 for c in times}
    ).select(CALL_COLUMNS)


def job_head(job: Job) -> dict[str, Any]:
    return {
        "folder": None if job.folder is None else str(job.folder),
        "traces": [str(r.trace) for r in job.ranks],
        "strategy": job.strategy,
        "strategy_source": job.strategy_of.source,
        "strategy_evidence": job.strategy_of.evidence or None,
    }


def finding(f: Finding) -> dict[str, Any]:
    """A finding as every format carries it (README "Findings")."""
    return {"rule": f.rule, "job": f.job, "what": f.what, "action": f.action, "numbers": f.numbers}
