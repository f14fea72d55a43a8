"""analyze_trace(path) -> RankReport: read one rank's trace, build its model, measure it; and
the same three steps for traces modelled and measured together (loader/parallel.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from traceview.analysis.rank import RankReport, keeps, rank_reports
from traceview.inputs import ProgressFn
from traceview.model import Timeline, build_timeline, model_rows
from traceview.parse import Trace, read_trace
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
    trace = read_for_model(path, progress, max_event_bytes, max_memory_bytes)
    timeline = build_timeline(trace, comm_pattern)
    trace = without_events(trace)
    return measured([(trace, timeline)], keep_intervals)[0]


def read_for_model(
    path: str | Path,
    progress: ProgressFn | None = None,
    max_event_bytes: int = MAX_EVENT_BYTES,
    max_memory_bytes: int | None = None,
) -> Trace:
    """The trace with only the rows the model reads (the events table is the largest thing in
    memory while the model is built)."""
    return model_rows(read_trace(path, progress, max_event_bytes, max_memory_bytes))


def without_events(trace: Trace) -> Trace:
    """The trace's description alone: once its timeline is built, the events (and the
    collectives' arguments) are all in it, and are let go before the measuring starts."""
    return msgspec.structs.replace(
        trace, events=trace.events.clear(), comm_args=trace.comm_args.clear()
    )


def measured(
    modelled: Sequence[tuple[Trace, Timeline]], keep_intervals: bool | int
) -> list[RankReport]:
    """Each rank's report from its timeline (its trace: its description, without_events),
    the timelines measured together (analysis/stack.py), each exactly as alone."""
    return rank_reports(
        [trace for trace, _ in modelled],
        [timeline for _, timeline in modelled],
        keep_intervals=[keeps(keep_intervals, trace.meta.rank) for trace, _ in modelled],
    )
