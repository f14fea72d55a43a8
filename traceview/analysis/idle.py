"""Where a GPU step's idle time sits: waiting for the step's first kernel, between the forward
and the backward pass, after the last collective, or in the gaps among the kernels of a pass —
each a different cause (data loading, host-side work such as the loss, synchronisation, launch
overhead)."""

from __future__ import annotations

import msgspec
import numpy as np
import polars as pl

from traceview.algebra import EMPTY, clip, difference, union
from traceview.analysis.stack import Stack
from traceview.model.batch import keyed
from traceview.queries import collected


class IdleWhere(msgspec.Struct, frozen=True, kw_only=True):
    """One GPU step's idle time, by where it sits. The last three sum to the step's `idle`
    (inside its window); the first is before the window."""

    step: int
    before_first_kernel_ns: int  # from the step's start on the host to its first kernel
    between_passes_ns: int  # from the last forward kernel to the first backward one
    after_last_collective_ns: int  # from the end of the step's last collective to its end
    among_kernels_ns: int  # every other gap inside the window


def idle_where(stack: Stack) -> list[list[IdleWhere]]:
    """Per part, per step of a GPU trace with communication measured; none for CPU-only
    traces. Sorted once by part and step and cut with numpy: a frame per step would cost more
    than the measuring."""
    out: list[list[IdleWhere]] = [[] for _ in range(stack.parts)]
    if stack.mode != "gpu" or stack.step_spans.height == 0:
        return out
    iv = stack.intervals
    rows = collected(
        iv.lazy()
        .filter(pl.col("step").is_not_null() & pl.col("kind").is_in(["compute", "comm"]))
        .select(*keyed(iv, "step", "ts_ns", "end_ns"), "backward", comm=pl.col("kind") == "comm")
        .sort(keyed(iv, "step", "ts_ns")),
        iv.height,
    )
    part = stack.part_of(rows)
    step, ts, end = (rows[c].to_numpy() for c in ("step", "ts_ns", "end_ns"))
    comm, backward = rows["comm"].to_numpy(), rows["backward"].fill_null(False).to_numpy()
    spans = stack.step_spans
    starts = dict(
        zip(
            zip(stack.part_of(spans).tolist(), spans["step"].to_list(), strict=True),
            spans["span_start_ns"].to_list(),
            strict=True,
        )
    )
    measured = stack.comm_measured & (np.bincount(stack.part_of(spans), minlength=stack.parts) > 0)
    cut = (step[1:] != step[:-1]) | (part[1:] != part[:-1])
    edges = np.concatenate(([0], np.flatnonzero(cut) + 1, [step.size]))
    previous_end, previous_part = None, -1
    for a, b in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True):
        if a == b:
            continue  # no rows at all
        p = int(part[a])
        if not measured[p]:  # no communication seen, or no steps
            continue
        if p != previous_part:
            previous_end, previous_part = None, p
        s, e, c, bw = ts[a:b], end[a:b], comm[a:b], backward[a:b]
        first, last = int(s.min()), int(e.max())
        # The GPU waits from the step's start on the host, or from the end of the previous
        # step's work if that ran on past it.
        waited = [t for t in (starts.get((p, int(step[a]))), previous_end) if t is not None]
        gaps = difference(union([first], [last]), union(s, e))
        between = _between_passes(s, e, ~c & bw, ~c & ~bw)
        between_gaps = clip(gaps, *between) if between else EMPTY
        after_start = int(e[c].max()) if c.any() else last
        after_gaps = difference(clip(gaps, after_start, last), between_gaps)
        out[p].append(
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
