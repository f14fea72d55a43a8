"""analyze_trace(path) -> RankReport: parse, model and measure one rank's trace."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl

from traceview.analysis.breakdown import Breakdown
from traceview.analysis.collective_summary import CollectiveSummary, collective_summaries
from traceview.analysis.collectives import collective_calls
from traceview.analysis.comm_summary import BackwardTail, backward_tails
from traceview.analysis.truncation import partial_steps
from traceview.analysis.windows import (
    BeforeFirstStep,
    StepBreakdown,
    before_first_step,
    step_breakdowns,
    total_breakdown,
)
from traceview.errors import Note
from traceview.model import build_timeline
from traceview.parse import read_trace
from traceview.parse.source import ProgressFn
from traceview.parse.stream import MAX_EVENT_BYTES

_EPOCH_2001_NS = 10**18  # trace clocks past this are already Unix time in ns


@dataclass(frozen=True, kw_only=True)
class RankReport:
    trace: Path
    host: str | None  # where the trace was recorded, when it says
    rank: int | None
    world_size: int | None
    backend: str | None
    mode: str  # "gpu" or "cpu"
    size_bytes: int
    truncated: bool
    notes: tuple[Note, ...]
    total: Breakdown | None  # None when the trace holds no work at all
    steps: tuple[StepBreakdown, ...]
    before_first_step: BeforeFirstStep | None  # kernels launched before the profiling window
    collectives: tuple[CollectiveSummary, ...]
    epoch_span_ns: tuple[int, int] | None  # wall-clock span, when the trace can tell
    calls: pl.DataFrame  # one row per collective call (analysis/collectives.py CALLS_SCHEMA)
    backward_tails: tuple[BackwardTail, ...]
    intervals: pl.DataFrame | None = None  # the whole model, when asked for (timeline export)

    @property
    def lossy(self) -> bool:
        return any(n.lossy for n in self.notes)


def analyze_trace(
    path: str | Path,
    *,
    comm_pattern: str | None = None,
    progress: ProgressFn | None = None,
    keep_intervals: bool = False,
    max_event_bytes: int = MAX_EVENT_BYTES,
) -> RankReport:
    """`max_event_bytes`: the longest event (or stretch without one) read before giving up."""
    trace = read_trace(path, progress, max_event_bytes)
    timeline = build_timeline(trace, comm_pattern)
    # The events are all in the timeline now: let them go before the measuring starts.
    meta, size, truncated, notes = trace.meta, trace.size_bytes, trace.truncated, [*trace.notes]
    path = trace.path
    del trace
    total = total_breakdown(timeline)
    calls = collective_calls(timeline)
    notes += timeline.notes
    if total is None:
        notes.append(Note(message="no compute or communication work in the trace"))
    steps = step_breakdowns(timeline)
    if truncated:
        partial, caveat = partial_steps(timeline, steps)
        steps = [replace(s, partial=s.step in partial) for s in steps]
        notes.append(caveat)
    return RankReport(
        trace=path,
        host=meta.host_name,
        rank=meta.rank,
        world_size=meta.world_size,
        backend=meta.backend,
        mode=timeline.mode,
        size_bytes=size,
        truncated=truncated,
        notes=tuple(notes),
        total=total,
        steps=tuple(steps),
        before_first_step=before_first_step(timeline),
        collectives=tuple(collective_summaries(calls)),
        epoch_span_ns=_epoch_span(total, meta.base_time_ns),
        calls=calls,
        backward_tails=tuple(backward_tails(timeline, calls)),
        intervals=timeline.intervals if keep_intervals else None,
    )


def _epoch_span(total: Breakdown | None, base_ns: int | None) -> tuple[int, int] | None:
    if total is None:
        return None
    if base_ns is not None:
        return base_ns + total.start_ns, base_ns + total.end_ns
    if total.start_ns > _EPOCH_2001_NS:
        return total.start_ns, total.end_ns
    return None
