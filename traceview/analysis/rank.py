"""RankReport: what one rank's trace tells — its totals, steps, collectives and notes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec
import polars as pl

from traceview.analysis.breakdown import Breakdown
from traceview.analysis.buckets import BackwardTail, backward_tails
from traceview.analysis.call_totals import CollectiveSummary, summaries_by_part
from traceview.analysis.calls import collective_calls
from traceview.analysis.gradients import GradientStep, gradient_steps
from traceview.analysis.idle import IdleWhere, idle_where
from traceview.analysis.overlap_tax import OverlapTax, overlap_taxes
from traceview.analysis.stack import Stack
from traceview.analysis.truncation import partial_steps
from traceview.analysis.windows import (
    BeforeFirstStep,
    StepBreakdown,
    before_first_steps,
    step_breakdowns_of,
    total_breakdowns,
)
from traceview.analysis.work import work_by_name
from traceview.errors import Note
from traceview.model import Timeline
from traceview.model.batch import parts_of
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
    # Per step, the gradients its backward pass made ready (AccumulateGrad ops)
    gradients: tuple[GradientStep, ...] = ()
    # How much slower compute ran beside communication (analysis/overlap_tax.py); None where it
    # cannot be measured, or the rank was stored before it was measured
    overlap_tax: OverlapTax | None = None

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
    return rank_reports([trace], [timeline], keep_intervals=[keep_intervals])[0]


def rank_reports(
    traces: Sequence[Trace], timelines: Sequence[Timeline], *, keep_intervals: Sequence[bool]
) -> list[RankReport]:
    """Each rank's report; the timelines of each mode measured together (analysis/stack.py),
    each exactly as it would be alone."""
    modes: dict[str, list[int]] = {}
    for i, timeline in enumerate(timelines):
        modes.setdefault(timeline.mode, []).append(i)
    out: dict[int, RankReport] = {}
    for members in modes.values():
        stack = Stack([timelines[i] for i in members])
        measured = _measured(stack)
        for p, i in enumerate(members):
            out[i] = _report(traces[i], timelines[i], keep_intervals[i], measured, p)
    return [out[i] for i in range(len(timelines))]


class _Measured(msgspec.Struct, frozen=True, kw_only=True):
    """A stack's measures, one entry a part."""

    totals: list[Breakdown | None]
    steps: list[list[StepBreakdown]]
    before: list[BeforeFirstStep | None]
    calls: list[pl.DataFrame]
    collectives: list[list[CollectiveSummary]]
    work: list[pl.DataFrame]
    tails: list[list[BackwardTail]]
    idle: list[list[IdleWhere]]
    taxes: list[OverlapTax | None]


def _measured(stack: Stack) -> _Measured:
    calls = collective_calls(stack)
    return _Measured(
        totals=total_breakdowns(stack),
        steps=step_breakdowns_of(stack),
        before=before_first_steps(stack),
        calls=parts_of(calls, stack.parts),
        collectives=summaries_by_part(calls, stack.parts),
        work=work_by_name(stack),
        tails=backward_tails(stack, calls),
        idle=idle_where(stack),
        taxes=overlap_taxes(stack),
    )


def _report(
    trace: Trace, timeline: Timeline, keep_intervals: bool, measured: _Measured, p: int
) -> RankReport:
    meta = trace.meta
    total = measured.totals[p]
    notes = [*trace.notes, *timeline.notes]
    if total is None:
        notes.append(Note(message="no compute or communication work in the trace"))
    steps = measured.steps[p]
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
        before_first_step=measured.before[p],
        collectives=tuple(measured.collectives[p]),
        epoch_span_ns=_epoch_span(total, meta.base_time_ns),
        calls=measured.calls[p],
        work=measured.work[p],
        backward_tails=tuple(measured.tails[p]),
        intervals=timeline.intervals if keep_intervals else None,
        wrappers=timeline.wrappers,
        idle_where=tuple(measured.idle[p]),
        devices=meta.devices,
        gradients=tuple(gradient_steps(timeline.gradients)),
        overlap_tax=measured.taxes[p],
    )


def _epoch_span(total: Breakdown | None, base_ns: int | None) -> tuple[int, int] | None:
    if total is None:
        return None
    if base_ns is not None:
        return base_ns + total.start_ns, base_ns + total.end_ns
    if total.start_ns > _EPOCH_2001_NS:
        return total.start_ns, total.end_ns
    return None
