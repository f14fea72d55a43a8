"""The overlap metrics of the contract, for one window of one rank.

C = union of compute, M = union of communication, both within the window W:
overlap = |C ∩ M|, exposed_comm = |M \\ C|, compute_only = |C \\ M|, idle = |W| - |C ∪ M|,
overlap_pct = overlap / |M| (undefined when M is empty). When the trace cannot show
communication at all (GPU work profiled without GPU activity), M is unknown, and so is every
figure that depends on it: None, never 0.
"""

from __future__ import annotations

import msgspec
import numpy as np

from traceview.algebra import IntervalSet, Ints, clip, covered_length, intersect, overlap_length

METRICS = ("window", "compute", "comm", "overlap", "exposed_comm", "compute_only", "idle")


# A frozen struct, not a dataclass: a CPU trace can have a step every few KB (200,000 in a GB),
# and a struct is made in a tenth of the time.
class Breakdown(msgspec.Struct, frozen=True, kw_only=True):
    start_ns: int
    end_ns: int
    compute_ns: int
    comm_ns: int | None
    overlap_ns: int | None
    exposed_comm_ns: int | None
    compute_only_ns: int | None
    idle_ns: int | None
    # Time inside [start, end) that was not profiled: between a rank's profiling cycles
    # (analysis/cycles.py). No step has any; it is no part of the window.
    gaps_ns: int = 0

    @property
    def window_ns(self) -> int:
        return self.end_ns - self.start_ns - self.gaps_ns

    @property
    def overlap_pct(self) -> float | None:
        if not self.comm_ns or self.overlap_ns is None:
            return None
        return 100.0 * self.overlap_ns / self.comm_ns

    def ns(self, metric: str) -> int | None:
        """One of METRICS by name."""
        return getattr(self, f"{metric}_ns")  # type: ignore[no-any-return]


def breakdown(
    compute: IntervalSet, comm: IntervalSet | None, start_ns: int, end_ns: int
) -> Breakdown:
    """`comm` None: the trace cannot show communication."""
    c = clip(compute, start_ns, end_ns)
    if comm is None:
        return Breakdown(
            start_ns=start_ns,
            end_ns=end_ns,
            compute_ns=c.length,
            comm_ns=None,
            overlap_ns=None,
            exposed_comm_ns=None,
            compute_only_ns=None,
            idle_ns=None,
        )
    m = clip(comm, start_ns, end_ns)
    # |C ∩ M| is the one measured span; the rest follows: |M \ C| = |M| - |C ∩ M|, ...
    overlap = overlap_length(c, m)
    return Breakdown(
        start_ns=start_ns,
        end_ns=end_ns,
        compute_ns=c.length,
        comm_ns=m.length,
        overlap_ns=overlap,
        exposed_comm_ns=m.length - overlap,
        compute_only_ns=c.length - overlap,
        idle_ns=(end_ns - start_ns) - (c.length + m.length - overlap),
    )


def breakdowns(
    compute: IntervalSet,
    comm: IntervalSet | None,
    starts: Ints,
    ends: Ints,
    moved_by: Ints | None = None,
) -> list[Breakdown]:
    """`breakdown` of many windows at once, the same figures: |C ∩ W|, |M ∩ W| and
    |(C ∩ M) ∩ W| from prefix sums over each set (a trace of thousands of steps costs a few
    array passes, not a pass per step). `moved_by`: how far each window and the sets were moved
    in time (analysis/stack.py); each breakdown says where its window was before."""
    ends = np.maximum(ends, starts)
    c = covered_length(compute, starts, ends)
    if comm is None:
        return _made(starts, ends, c, None, None, moved_by)
    m = covered_length(comm, starts, ends)
    o = covered_length(intersect(compute, comm), starts, ends)
    return _made(starts, ends, c, m, o, moved_by)


def spanning_breakdowns(
    compute: IntervalSet, comm: IntervalSet | None, starts: Ints, ends: Ints, moved_by: Ints
) -> list[Breakdown]:
    """`breakdowns` of windows that each hold their intervals whole and none of another's (a
    rank's whole trace, each moved into a stretch of its own): C ∩ M is then not built, its
    length in each window is that of its comm intervals' cover by C."""
    c = covered_length(compute, starts, ends)
    if comm is None:
        return _made(starts, ends, c, None, None, moved_by)
    m = covered_length(comm, starts, ends)
    hidden = np.concatenate(([0], np.cumsum(covered_length(compute, comm.starts, comm.ends))))
    first = np.searchsorted(comm.starts, starts, side="left")
    past = np.searchsorted(comm.starts, ends, side="left")
    return _made(starts, ends, c, m, hidden[past] - hidden[first], moved_by)


def _made(
    starts: Ints,
    ends: Ints,
    c: Ints,
    m: Ints | None,
    o: Ints | None,
    moved_by: Ints | None,
) -> list[Breakdown]:
    if moved_by is not None:
        starts, ends = starts - moved_by, ends - moved_by
    windows = zip(starts.tolist(), ends.tolist(), strict=True)
    if m is None or o is None:
        return [
            Breakdown(start_ns=s, end_ns=e, compute_ns=ci, comm_ns=None, overlap_ns=None,
                      exposed_comm_ns=None, compute_only_ns=None, idle_ns=None)
            for (s, e), ci in zip(windows, c.tolist(), strict=True)
        ]  # fmt: skip
    return [
        Breakdown(start_ns=s, end_ns=e, compute_ns=ci, comm_ns=mi, overlap_ns=oi,
                  exposed_comm_ns=mi - oi, compute_only_ns=ci - oi,
                  idle_ns=(e - s) - (ci + mi - oi))
        for (s, e), ci, mi, oi in zip(windows, c.tolist(), m.tolist(), o.tolist(), strict=True)
    ]  # fmt: skip


def comm_unknown(b: Breakdown) -> Breakdown:
    """The breakdown of a trace that cannot show communication: its compute alone."""
    return msgspec.structs.replace(
        b, comm_ns=None, overlap_ns=None, exposed_comm_ns=None, compute_only_ns=None, idle_ns=None
    )
