"""Per-step and whole-trace breakdowns of one rank's timeline."""

from __future__ import annotations

import msgspec
import numpy as np
import polars as pl

from traceview.algebra import IntervalSet, union
from traceview.analysis.breakdown import Breakdown, breakdown, breakdowns
from traceview.analysis.spans import kind_set
from traceview.model import Timeline
from traceview.model.gpu import device_counts
from traceview.queries import collected

# The kinds that span a GPU step's window: memcpy/memset run inside it but do not stretch it.
WINDOW_KINDS = ("compute", "comm")


class StepBreakdown(msgspec.Struct, frozen=True, kw_only=True):  # as Breakdown: one a step
    step: int
    breakdown: Breakdown
    partial: bool = False  # the trace was cut short and this step may be missing work


class BeforeFirstStep(msgspec.Struct, frozen=True, kw_only=True):
    """Kernels whose launch is not in the trace: launched before the profiling window (the
    previous, unprofiled step), still running when tracing began. They belong to no step."""

    kernels: int
    breakdown: Breakdown
    memcpy: int = 0
    memset: int = 0


def _comm(rows: pl.DataFrame, timeline: Timeline) -> IntervalSet | None:
    """The communication of `rows`; None where the trace cannot show any."""
    return kind_set(rows, "comm") if timeline.comm_measured else None


def _spanned(rows: pl.DataFrame, spanning: pl.DataFrame, timeline: Timeline) -> Breakdown | None:
    """The breakdown of `rows` alone, from the first start to the last end of `spanning`."""
    if spanning.height == 0:
        return None
    return breakdown(
        kind_set(rows, "compute"),
        _comm(rows, timeline),
        int(spanning["ts_ns"].min()),  # type: ignore[arg-type]
        int(spanning["end_ns"].max()),  # type: ignore[arg-type]
    )


def _own_window(rows: pl.DataFrame, timeline: Timeline) -> Breakdown | None:
    """The breakdown of `rows` alone, in the window spanned by their compute and comm."""
    return _spanned(rows, rows.filter(pl.col("kind").is_in(WINDOW_KINDS)), timeline)


def _work(timeline: Timeline) -> pl.DataFrame:
    """The intervals of work, with only the columns the breakdowns read (the intervals are
    wide: filtering them all would copy every column)."""
    return collected(
        timeline.intervals.lazy()
        .filter(pl.col("kind") != "other")
        .select("kind", "name", "ts_ns", "end_ns", "launch_ns", "step"),
        timeline.intervals.height,
    )


def total_breakdown(timeline: Timeline) -> Breakdown | None:
    """The whole trace: from the first start to the last end of any compute, comm or memory work."""
    work = _work(timeline)
    return _spanned(work, work, timeline)


def step_breakdowns(timeline: Timeline) -> list[StepBreakdown]:
    """GPU: each step's own kernels (those it launched), in the window from the first start to
    the last end of its compute and comm kernels. CPU-only: everything inside the step's
    ProfilerStep span."""
    work = _work(timeline)
    if timeline.mode == "cpu":
        spans = timeline.step_spans.sort("step")
        found = breakdowns(
            kind_set(work, "compute"),
            _comm(work, timeline),
            spans["span_start_ns"].to_numpy(),
            spans["span_end_ns"].to_numpy(),
        )
        return [
            StepBreakdown(step=step, breakdown=b)
            for step, b in zip(spans["step"].to_list(), found, strict=True)
        ]
    # Sorted once by step, each step's compute rows before its comm rows, and cut with numpy:
    # hundreds of steps, so a frame or a filter each would cost more than the sums themselves.
    rows = collected(
        work.lazy()
        .filter(pl.col("step").is_not_null() & pl.col("kind").is_in(WINDOW_KINDS))
        .select("step", comm=pl.col("kind") == "comm", ts_ns="ts_ns", end_ns="end_ns")
        .sort("step", "comm", maintain_order=True),
        work.height,
    )
    if rows.height == 0:
        return []
    step, is_comm = rows["step"].to_numpy(), rows["comm"].to_numpy()
    ts, end = rows["ts_ns"].to_numpy(), rows["end_ns"].to_numpy()
    edges = np.concatenate(([0], np.flatnonzero(step[1:] != step[:-1]) + 1, [step.size]))
    computes = np.zeros(step.size + 1, np.int64)  # compute rows before each row
    np.cumsum(~is_comm, out=computes[1:])
    out = []
    for a, b in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True):
        split = a + int(computes[b] - computes[a])  # where the step's comm rows begin
        own = breakdown(
            union(ts[a:split], end[a:split]),
            union(ts[split:b], end[split:b]) if timeline.comm_measured else None,
            int(ts[a:b].min()),
            int(end[a:b].max()),
        )
        out.append(StepBreakdown(step=int(step[a]), breakdown=own))
    return out


def before_first_step(timeline: Timeline) -> BeforeFirstStep | None:
    """GPU traces with steps and recorded launches: the kernels launched before the window."""
    work = _work(timeline)
    if (
        timeline.mode != "gpu"
        or timeline.step_spans.height == 0
        or work["launch_ns"].null_count() in (0, work.height)  # none, or no launch recorded
    ):
        return None
    rows = work.filter(pl.col("launch_ns").is_null())
    own = _own_window(rows, timeline)
    if own is None:
        return None
    kernels, memcpy, memset = device_counts(rows)
    return BeforeFirstStep(kernels=kernels, memcpy=memcpy, memset=memset, breakdown=own)
