"""Per-step and whole-trace breakdowns of one rank's timeline."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from traceview.algebra import IntervalSet, union
from traceview.analysis.breakdown import Breakdown, breakdown
from traceview.model import Timeline


@dataclass(frozen=True, kw_only=True)
class StepBreakdown:
    step: int
    breakdown: Breakdown


def _set(frame: pl.DataFrame) -> IntervalSet:
    return union(frame["ts_ns"].to_numpy(), frame["end_ns"].to_numpy())


def total_breakdown(timeline: Timeline) -> Breakdown | None:
    """The whole trace: from the first start to the last end of any compute, comm or memory work."""
    work = timeline.intervals.filter(pl.col("kind") != "other")
    if work.height == 0:
        return None
    return breakdown(
        _set(work.filter(pl.col("kind") == "compute")),
        _set(work.filter(pl.col("kind") == "comm")),
        int(work["ts_ns"].min()),  # type: ignore[arg-type]
        int(work["end_ns"].max()),  # type: ignore[arg-type]
    )


def step_breakdowns(timeline: Timeline) -> list[StepBreakdown]:
    """GPU: each step's own kernels, in the window from their first start to their last end.
    CPU-only: everything inside the step's ProfilerStep span."""
    work = timeline.intervals.filter(pl.col("kind") != "other")
    if timeline.mode == "cpu":
        compute = _set(work.filter(pl.col("kind") == "compute"))
        comm = _set(work.filter(pl.col("kind") == "comm"))
        return [
            StepBreakdown(step=step, breakdown=breakdown(compute, comm, start, end))
            for step, start, end in timeline.step_spans.sort("step").iter_rows()
        ]
    out = []
    for (step,), rows in (
        work.filter(pl.col("step").is_not_null()).sort("step").group_by("step", maintain_order=True)
    ):
        out.append(
            StepBreakdown(
                step=int(step),  # type: ignore[arg-type]
                breakdown=breakdown(
                    _set(rows.filter(pl.col("kind") == "compute")),
                    _set(rows.filter(pl.col("kind") == "comm")),
                    int(rows["ts_ns"].min()),  # type: ignore[arg-type]
                    int(rows["end_ns"].max()),  # type: ignore[arg-type]
                ),
            )
        )
    return out
