"""Where a GPU step's idle time sits: waiting for the step's first kernel, between the forward
and the backward pass, after the last collective, or in the gaps among the kernels of a pass —
each a different cause (data loading, host-side work such as the loss, synchronisation, launch
overhead)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from traceview.algebra import EMPTY, clip, difference, union
from traceview.model import Timeline


@dataclass(frozen=True, kw_only=True)
class IdleWhere:
    """One GPU step's idle time, by where it sits. The last three sum to the step's `idle`
    (inside its window); the first is before the window."""

    step: int
    before_first_kernel_ns: int  # from the step's start on the host to its first kernel
    between_passes_ns: int  # from the last forward kernel to the first backward one
    after_last_collective_ns: int  # from the end of the step's last collective to its end
    among_kernels_ns: int  # every other gap inside the window


def idle_where(timeline: Timeline) -> list[IdleWhere]:
    """Per step of a GPU trace with communication measured; none for CPU-only traces."""
    if timeline.mode != "gpu" or not timeline.comm_measured or timeline.step_spans.height == 0:
        return []
    work = timeline.intervals.filter(
        pl.col("step").is_not_null() & pl.col("kind").is_in(["compute", "comm"])
    )
    starts = dict(timeline.step_spans.select("step", "span_start_ns").iter_rows())
    out, previous_end = [], None
    for (step,), rows in work.sort("step").group_by("step", maintain_order=True):
        first, last = int(rows["ts_ns"].min()), int(rows["end_ns"].max())  # type: ignore[arg-type]
        # The GPU waits from the step's start on the host, or from the end of the previous
        # step's work if that ran on past it.
        waited = [t for t in (starts.get(step), previous_end) if t is not None]
        waited_from = max(waited) if waited else first
        gaps = difference(
            union([first], [last]), union(rows["ts_ns"].to_numpy(), rows["end_ns"].to_numpy())
        )
        between = _between_passes(rows)
        comm = rows.filter(pl.col("kind") == "comm")
        after_start = int(comm["end_ns"].max()) if comm.height else last  # type: ignore[arg-type]
        between_gaps = clip(gaps, *between) if between else EMPTY
        after_gaps = difference(clip(gaps, after_start, last), between_gaps)
        out.append(
            IdleWhere(
                step=int(step),  # type: ignore[arg-type]
                before_first_kernel_ns=max(0, first - waited_from),
                between_passes_ns=between_gaps.length,
                after_last_collective_ns=after_gaps.length,
                among_kernels_ns=gaps.length - between_gaps.length - after_gaps.length,
            )
        )
        previous_end = last
    return out


def _between_passes(rows: pl.DataFrame) -> tuple[int, int] | None:
    """[end of the last forward compute kernel, start of the first backward one), where the
    step has both."""
    compute = rows.filter(pl.col("kind") == "compute")
    backward = compute.filter(pl.col("backward"))
    if backward.height == 0:
        return None
    begins = int(backward["ts_ns"].min())  # type: ignore[arg-type]
    forward = compute.filter(~pl.col("backward") & (pl.col("ts_ns") < begins))
    if forward.height == 0:
        return None
    ends = int(forward["end_ns"].max())  # type: ignore[arg-type]
    return (ends, begins) if ends < begins else None
