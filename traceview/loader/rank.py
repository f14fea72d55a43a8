"""analyze_trace(path) -> RankReport: read one rank's trace, build its model, measure it."""

from __future__ import annotations

from pathlib import Path

import msgspec

from traceview.analysis.rank import RankReport, keeps, rank_report
from traceview.inputs import ProgressFn
from traceview.model import build_timeline, model_rows
from traceview.parse import read_trace
from traceview.parse.stream import MAX_EVENT_BYTES


def analyze_trace(
    path: str | Path,
    *,
    comm_pattern: str | None = None,
    progress: ProgressFn | None = None,
    keep_intervals: bool | int = False,
    max_event_bytes: int = MAX_EVENT_BYTES,
    max_memory_bytes: int | None = None,
) -> RankReport:
    """`comm_pattern`: more names to count as communication; `keep_intervals`: keep the model
    in the report (timelines, export) — a number N: only for ranks below N (and unnamed ones);
    `max_event_bytes`: the longest event read; `max_memory_bytes`: the memory bound
    (parse/budget.py; default: the machine's memory)."""
    # Only the rows the model reads are held while it is built (the events table is the
    # largest thing in memory).
    trace = model_rows(read_trace(path, progress, max_event_bytes, max_memory_bytes))
    timeline = build_timeline(trace, comm_pattern)
    # The events (and the collectives' arguments) are all in the timeline now: let them go
    # before the measuring starts.
    trace = msgspec.structs.replace(
        trace, events=trace.events.clear(), comm_args=trace.comm_args.clear()
    )
    return rank_report(trace, timeline, keep_intervals=keeps(keep_intervals, trace.meta.rank))
