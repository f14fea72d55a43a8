"""Where a GPU step's idle time sits: waiting for the step's first kernel, between the forward
and the backward pass, after the last collective, or in the gaps among the kernels of a pass —
each a different cause (data loading, host-side work such as the loss, synchronisation, launch
overhead)."""

from __future__ import annotations

import msgspec
import numpy as np
import polars as pl

from traceview.algebra import EMPTY, clip, difference, union
from traceview.model import Timeline
from traceview.queries import collected


class IdleWhere(msgspec.Struct, frozen=True, kw_only=True):
    """One GPU step's idle time, by where it sits. The last three sum to the step's `idle`
    (inside its window); the first is before the window."""

    step: int
    before_first_kernel_ns: int  # from the step's start on the host to its first kernel
    between_passes_ns: int  # from the last forward kernel to the first backward one
    after_last_collective_ns: int  # from the end of the step's last collective to its end
    among_kernels_ns: int  # every other gap inside the window


def idle_where(timeline: Timeline) -> list[IdleWhere]:
    """Per step of a GPU trace with communication measured; none for CPU-only traces. Sorted
    once by step and cut with numpy: a frame per step would cost more than the measuring."""
    if timeline.mode != "gpu" or not timeline.comm_measured or timeline.step_spans.height == 0:
        return []
    rows = collected(
        timeline.intervals.lazy()
        .filter(pl.col("step").is_not_null() & pl.col("kind").is_in(["compute", "comm"]))
        .select("step", "ts_ns", "end_ns", comm=pl.col("kind") == "comm", backward="backward")
        .sort("step", "ts_ns"),
        timeline.intervals.height,
    )
    if rows.height == 0:
        return []
    step, ts, end = (rows[c].to_numpy() for c in ("step", "ts_ns", "end_ns"))
    comm, backward = rows["comm"].to_numpy(), rows["backward"].fill_null(False).to_numpy()
    starts = dict(timeline.step_spans.select("step", "span_start_ns").iter_rows())
    edges = np.concatenate(([0], np.flatnonzero(step[1:] != step[:-1]) + 1, [step.size]))
    out, previous_end = [], None
    for a, b in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True):
        s, e, c, bw = ts[a:b], end[a:b], comm[a:b], backward[a:b]
        first, last = int(s.min()), int(e.max())
        # The GPU waits from the step's start on the host, or from the end of the previous
        # step's work if that ran on past it.
        waited = [t for t in (starts.get(int(step[a])), previous_end) if t is not None]
        gaps = difference(union([first], [last]), union(s, e))
        between = _between_passes(s, e, ~c & bw, ~c & ~bw)
        between_gaps = clip(gaps, *between) if between else EMPTY
        after_start = int(e[c].max()) if c.any() else last
        after_gaps = difference(clip(gaps, after_start, last), between_gaps)
        out.append(
            IdleWhere(
                step=int(step[a]),
                before_first_kernel_ns=max(0, first - max(waited)) if waited else 0,
                between_passes_ns=between_gaps.length,
                after_last_collective_ns=after_gaps.length,
                among_kernels_ns=gaps.length - between_gaps.length - after_gaps.length,
            )
        )
        previous_end = last
    return out


def _between_passes(
    ts: np.ndarray, end: np.ndarray, backward: np.ndarray, forward: np.ndarray
) -> tuple[int, int] | None:
    """[end of the last forward compute kernel, start of the first backward one), where the
    step has both (`backward`, `forward`: masks of its compute kernels)."""
    if not backward.any():
        return None
    begins = int(ts[backward].min())
    before = forward & (ts < begins)
    if not before.any():
        return None
    ends = int(end[before].max())
    return (ends, begins) if ends < begins else None
