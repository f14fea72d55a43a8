"""Per-step and whole-trace breakdowns of ranks' timelines, every rank of a stack at once
(analysis/stack.py)."""

from __future__ import annotations

import msgspec
import numpy as np
import polars as pl

from traceview.algebra import IntervalSet, union
from traceview.analysis.breakdown import (
    Breakdown,
    breakdown,
    breakdowns,
    comm_unknown,
    spanning_breakdowns,
)
from traceview.analysis.spans import kind_set
from traceview.analysis.stack import Stack
from traceview.model import Timeline
from traceview.model.batch import PART, keyed, part_edges
from traceview.model.gpu import device_counts
from traceview.queries import collected

# The kinds that span a GPU step's window: memcpy/memset run inside it but do not stretch it.
WINDOW_KINDS = ("compute", "comm")


class StepBreakdown(msgspec.Struct, frozen=True, kw_only=True):  # as Breakdown: one a step
    step: int
    breakdown: Breakdown
    partial: bool = False  # the trace was cut short and this step may be missing work

    @property
    def holds_work(self) -> bool:
        """Whether any compute ran in it: the step the profiler opens at a loop's last
        `prof.step()` and closes as it stops holds none (at most the tail of a collective that
        began before it), and is no training step."""
        return self.breakdown.compute_ns > 0


class BeforeFirstStep(msgspec.Struct, frozen=True, kw_only=True):
    """Kernels whose launch is not in the trace: launched before the profiling window (the
    previous, unprofiled step), still running when tracing began. They belong to no step."""

    kernels: int
    breakdown: Breakdown
    memcpy: int = 0
    memset: int = 0


def _own_window(rows: pl.DataFrame, comm_measured: bool) -> Breakdown | None:
    """The breakdown of `rows` (one part's) alone, in the window spanned by their compute and
    comm."""
    spanning = rows.filter(pl.col("kind").is_in(WINDOW_KINDS))
    if spanning.height == 0:
        return None
    return breakdown(
        kind_set(rows, "compute"),
        kind_set(rows, "comm") if comm_measured else None,
        int(spanning["ts_ns"].min()),  # type: ignore[arg-type]
        int(spanning["end_ns"].max()),  # type: ignore[arg-type]
    )


def _known(stack: Stack, part: int, b: Breakdown) -> Breakdown:
    return b if stack.comm_measured[part] else comm_unknown(b)


def _comm(stack: Stack) -> IntervalSet | None:
    """The stack's communication; None where no part's can be seen."""
    return stack.comm if stack.comm_measured.any() else None


def total_breakdowns(stack: Stack) -> list[Breakdown | None]:
    """Each part's whole trace: from the first start to the last end of any compute, comm or
    memory work (None for a part without any)."""
    work = stack.work
    part = stack.part_of(work)
    edges = part_edges(part, stack.parts)
    has = np.flatnonzero(edges[1:] > edges[:-1])
    out: list[Breakdown | None] = [None] * stack.parts
    if has.size == 0:
        return out
    first, shift = edges[has], stack.shift[has]
    starts = np.minimum.reduceat(work["ts_ns"].to_numpy(), first) + shift
    ends = np.maximum.reduceat(work["end_ns"].to_numpy(), first) + shift
    found = spanning_breakdowns(stack.compute, _comm(stack), starts, ends, shift)
    for p, b in zip(has.tolist(), found, strict=True):
        out[p] = _known(stack, p, b)
    return out


def total_breakdown(timeline: Timeline) -> Breakdown | None:
    """The whole trace (total_breakdowns of one timeline)."""
    return total_breakdowns(Stack([timeline]))[0]


def step_breakdowns_of(stack: Stack) -> list[list[StepBreakdown]]:
    """Each part's steps. GPU: each step's own kernels (those it launched), in the window from
    the first start to the last end of its compute and comm kernels. CPU-only: everything
    inside the step's ProfilerStep span."""
    if stack.mode == "cpu":
        spans = stack.step_spans.sort(keyed(stack.step_spans, "step"))
        part = stack.part_of(spans)
        found = breakdowns(
            stack.compute,
            _comm(stack),
            stack.moved(spans, "span_start_ns"),
            stack.moved(spans, "span_end_ns"),
            stack.shift[part],
        )
        steps = [
            StepBreakdown(step=step, breakdown=_known(stack, p, b))
            for step, p, b in zip(spans["step"].to_list(), part.tolist(), found, strict=True)
        ]
        return stack.split(part, steps)
    # Sorted once by part and step, each step's compute rows before its comm rows, and cut
    # with numpy: hundreds of steps, so a frame or a filter each would cost more than the sums.
    work = stack.work
    rows = collected(
        work.lazy()
        .filter(pl.col("step").is_not_null() & pl.col("kind").is_in(WINDOW_KINDS))
        .select(*keyed(work), "step", comm=pl.col("kind") == "comm", ts_ns="ts_ns", end_ns="end_ns")
        .sort(*keyed(work, "step", "comm"), maintain_order=True),
        work.height,
    )
    part = stack.part_of(rows)
    step, is_comm = rows["step"].to_numpy(), rows["comm"].to_numpy()
    ts, end = rows["ts_ns"].to_numpy(), rows["end_ns"].to_numpy()
    cut = (step[1:] != step[:-1]) | (part[1:] != part[:-1])
    edges = np.concatenate(([0], np.flatnonzero(cut) + 1, [step.size]))
    computes = np.zeros(step.size + 1, np.int64)  # compute rows before each row
    np.cumsum(~is_comm, out=computes[1:])
    out: list[list[StepBreakdown]] = [[] for _ in range(stack.parts)]
    for a, b in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True):
        if a == b:
            continue  # no rows at all
        p = int(part[a])
        split = a + int(computes[b] - computes[a])  # where the step's comm rows begin
        own = breakdown(
            union(ts[a:split], end[a:split]),
            union(ts[split:b], end[split:b]) if stack.comm_measured[p] else None,
            int(ts[a:b].min()),
            int(end[a:b].max()),
        )
        out[p].append(StepBreakdown(step=int(step[a]), breakdown=own))
    return out


def step_breakdowns(timeline: Timeline) -> list[StepBreakdown]:
    """One timeline's steps (step_breakdowns_of a stack of one)."""
    return step_breakdowns_of(Stack([timeline]))[0]


def before_first_steps(stack: Stack) -> list[BeforeFirstStep | None]:
    """GPU traces with steps and recorded launches: the kernels launched before the window."""
    out: list[BeforeFirstStep | None] = [None] * stack.parts
    if stack.mode != "gpu":
        return out
    work = stack.work
    part = stack.part_of(work)
    rows = np.bincount(part, minlength=stack.parts)
    unlaunched = np.bincount(part[work["launch_ns"].is_null().to_numpy()], minlength=stack.parts)
    stepped = np.bincount(stack.part_of(stack.step_spans), minlength=stack.parts)
    # Some, not all, launches unrecorded (none recorded: the trace records no launches).
    for p in np.flatnonzero((stepped > 0) & (unlaunched > 0) & (unlaunched < rows)).tolist():
        mine = work.filter(pl.col("launch_ns").is_null())
        if stack.parts > 1:
            mine = mine.filter(pl.col(PART) == p)
        own = _own_window(mine, bool(stack.comm_measured[p]))
        if own is not None:
            kernels, memcpy, memset = device_counts(mine)
            out[p] = BeforeFirstStep(kernels=kernels, memcpy=memcpy, memset=memset, breakdown=own)
    return out
