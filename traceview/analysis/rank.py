"""RankReport: what one rank's trace tells — its totals, steps, collectives and notes."""

from __future__ import annotations

from pathlib import Path

import msgspec
import polars as pl

from traceview.analysis.breakdown import Breakdown
from traceview.analysis.buckets import BackwardTail, backward_tails
from traceview.analysis.call_totals import CollectiveSummary, collective_summaries
from traceview.analysis.calls import collective_calls
from traceview.analysis.idle import IdleWhere, idle_where
from traceview.analysis.truncation import partial_steps
from traceview.analysis.windows import (
    BeforeFirstStep,
    StepBreakdown,
    before_first_step,
    step_breakdowns,
    total_breakdown,
)
from traceview.analysis.work import work_by_name
from traceview.errors import Note
from traceview.model import Timeline
from traceview.parse import Trace
from traceview.parse.run_record import TraceRun

_EPOCH_2001_NS = 10**18  # trace clocks past this are already Unix time in ns


class RankReport(msgspec.Struct, frozen=True, kw_only=True):
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
    calls: pl.DataFrame  # one row per collective call (analysis/calls.py CALLS_SCHEMA)
    backward_tails: tuple[BackwardTail, ...]
    intervals: pl.DataFrame | None = None  # the whole model, when asked for (timeline export)
    # Time per step and name of work (analysis/work.py WORK_SCHEMA); None where the rank was
    # read from a store without it (Job.work reads it there when asked for).
    work: pl.DataFrame | None = None
    run: TraceRun | None = None  # the run the trace says it belongs to (harness traces)
    # The data-parallel wrappers whose record functions the trace holds (parse/names.py
    # WRAPPER_SPANS): "ddp", "zero_redundancy_optimizer", "fsdp2", "fsdp1".
    wrappers: tuple[str, ...] = ()
    idle_where: tuple[IdleWhere, ...] = ()  # GPU steps: where their idle time sits
    devices: tuple[str, ...] = ()  # the GPUs the trace lists (deviceProperties names)

    @property
    def recorded_strategy(self) -> str | None:
        """The strategy the trace records of its run (harness traces), if it does."""
        return self.run.strategy if self.run is not None else None

    @property
    def lossy(self) -> bool:
        return any(n.lossy for n in self.notes)


def keeps(keep_intervals: bool | int, rank: int | None) -> bool:
    """Whether a rank's intervals are kept: all, none, or those of ranks below a number (and
    of a rank that does not say)."""
    if isinstance(keep_intervals, bool):
        return keep_intervals
    return rank is None or rank < keep_intervals


def rank_report(trace: Trace, timeline: Timeline, *, keep_intervals: bool = False) -> RankReport:
    """Everything one rank's trace tells, measured on its timeline. `trace` need not hold its
    events any more: only its description is read."""
    meta = trace.meta
    total = total_breakdown(timeline)
    calls = collective_calls(timeline)
    notes = [*trace.notes, *timeline.notes]
    if total is None:
        notes.append(Note(message="no compute or communication work in the trace"))
    steps = step_breakdowns(timeline)
    if trace.truncated:
        partial, caveat = partial_steps(timeline, steps)
        steps = [msgspec.structs.replace(s, partial=s.step in partial) for s in steps]
        notes.append(caveat)
    return RankReport(
        trace=trace.path,
        host=meta.host_name,
        run=meta.run,
        rank=meta.rank,
        world_size=meta.world_size,
        backend=meta.backend,
        mode=timeline.mode,
        size_bytes=trace.size_bytes,
        truncated=trace.truncated,
        notes=tuple(notes),
        total=total,
        steps=tuple(steps),
        before_first_step=before_first_step(timeline),
        collectives=tuple(collective_summaries(calls)),
        epoch_span_ns=_epoch_span(total, meta.base_time_ns),
        calls=calls,
        work=work_by_name(timeline),
        backward_tails=tuple(backward_tails(timeline, calls)),
        intervals=timeline.intervals if keep_intervals else None,
        wrappers=timeline.wrappers,
        idle_where=tuple(idle_where(timeline)),
        devices=meta.devices,
    )


def _epoch_span(total: Breakdown | None, base_ns: int | None) -> tuple[int, int] | None:
    if total is None:
        return None
    if base_ns is not None:
        return base_ns + total.start_ns, base_ns + total.end_ns
    if total.start_ns > _EPOCH_2001_NS:
        return total.start_ns, total.end_ns
    return None
