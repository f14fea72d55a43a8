"""analyze_trace(path) -> RankReport: parse, model and measure one rank's trace."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from traceview.analysis.breakdown import Breakdown
from traceview.analysis.collective_summary import CollectiveSummary, collective_summaries
from traceview.analysis.windows import StepBreakdown, step_breakdowns, total_breakdown
from traceview.errors import Note
from traceview.model import build_timeline
from traceview.parse import read_trace
from traceview.parse.source import ProgressFn

_EPOCH_2001_NS = 10**18  # trace clocks past this are already Unix time in ns


@dataclass(frozen=True, kw_only=True)
class RankReport:
    trace: Path
    rank: int | None
    world_size: int | None
    backend: str | None
    mode: str  # "gpu" or "cpu"
    size_bytes: int
    truncated: bool
    notes: tuple[Note, ...]
    total: Breakdown | None  # None when the trace holds no work at all
    steps: tuple[StepBreakdown, ...]
    collectives: tuple[CollectiveSummary, ...]
    epoch_span_ns: tuple[int, int] | None  # wall-clock span, when the trace can tell

    @property
    def lossy(self) -> bool:
        return any(n.lossy for n in self.notes)


def analyze_trace(
    path: str | Path, *, comm_pattern: str | None = None, progress: ProgressFn | None = None
) -> RankReport:
    trace = read_trace(path, progress)
    timeline = build_timeline(trace, comm_pattern)
    total = total_breakdown(timeline)
    notes = [*trace.notes, *timeline.notes]
    if total is None:
        notes.append(Note(message="no compute or communication work in the trace"))
    return RankReport(
        trace=trace.path,
        rank=trace.meta.rank,
        world_size=trace.meta.world_size,
        backend=trace.meta.backend,
        mode=timeline.mode,
        size_bytes=trace.size_bytes,
        truncated=trace.truncated,
        notes=tuple(notes),
        total=total,
        steps=tuple(step_breakdowns(timeline)),
        collectives=tuple(collective_summaries(timeline)),
        epoch_span_ns=_epoch_span(total, trace.meta.base_time_ns),
    )


def _epoch_span(total: Breakdown | None, base_ns: int | None) -> tuple[int, int] | None:
    if total is None:
        return None
    if base_ns is not None:
        return base_ns + total.start_ns, base_ns + total.end_ns
    if total.start_ns > _EPOCH_2001_NS:
        return total.start_ns, total.end_ns
    return None
