"""Per-step and whole-trace breakdowns of one rank's timeline."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from traceview.algebra import EMPTY, IntervalSet, union
from traceview.analysis.breakdown import Breakdown, breakdown
from traceview.analysis.spans import kind_set
from traceview.model import Timeline

# The kinds that span a GPU step's window: memcpy/memset run inside it but do not stretch it.
WINDOW_KINDS = ("compute", "comm")


@dataclass(frozen=True, kw_only=True)
class StepBreakdown:
    step: int
    breakdown: Breakdown
    partial: bool = False  # the trace was cut short and this step may be missing work


@dataclass(frozen=True, kw_only=True)
class BeforeFirstStep:
    """Kernels whose launch is not in the trace: launched before the profiling window (the
    previous, unprofiled step), still running when tracing began. They belong to no step."""

    kernels: int
    breakdown: Breakdown


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
    return timeline.intervals.filter(pl.col("kind") != "other")


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
        compute = kind_set(work, "compute")
        comm = _comm(work, timeline)
        return [
            StepBreakdown(step=step, breakdown=breakdown(compute, comm, start, end))
            for step, start, end in timeline.step_spans.sort("step").iter_rows()
        ]
    # Split once by step and kind (hundreds of steps: one filter each would cost more).
    parts = (
        work.lazy()
        .filter(pl.col("step").is_not_null())
        .select("step", "kind", "ts_ns", "end_ns")
        .collect()
        .partition_by("step", "kind", as_dict=True)
    )
    by_step: dict[int, dict[str, pl.DataFrame]] = {}
    for (step, kind), rows in parts.items():
        by_step.setdefault(int(step), {})[str(kind)] = rows  # type: ignore[call-overload]
    out = []
    for step in sorted(by_step):
        own = _kinds_window(by_step[step], timeline)
        if own is not None:
            out.append(StepBreakdown(step=step, breakdown=own))
    return out


def _kinds_window(kinds: dict[str, pl.DataFrame], timeline: Timeline) -> Breakdown | None:
    """_own_window of rows already split by kind."""
    spanning = [kinds[k] for k in WINDOW_KINDS if k in kinds]
    if not spanning:
        return None

    def union_of(kind: str) -> IntervalSet:
        rows = kinds.get(kind)
        return EMPTY if rows is None else union(rows["ts_ns"].to_numpy(), rows["end_ns"].to_numpy())

    return breakdown(
        union_of("compute"),
        union_of("comm") if timeline.comm_measured else None,
        min(int(rows["ts_ns"].min()) for rows in spanning),  # type: ignore[arg-type]
        max(int(rows["end_ns"].max()) for rows in spanning),  # type: ignore[arg-type]
    )


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
    return None if own is None else BeforeFirstStep(kernels=rows.height, breakdown=own)
