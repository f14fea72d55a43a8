"""The overlap metrics of the contract, for one window of one rank.

C = union of compute, M = union of communication, both within the window W:
overlap = |C ∩ M|, exposed_comm = |M \\ C|, compute_only = |C \\ M|, idle = |W| - |C ∪ M|,
overlap_pct = overlap / |M| (undefined when M is empty).
"""

from __future__ import annotations

from dataclasses import dataclass

from traceview.algebra import IntervalSet, clip, difference, intersect


@dataclass(frozen=True, kw_only=True)
class Breakdown:
    start_ns: int
    end_ns: int
    compute_ns: int
    comm_ns: int
    overlap_ns: int
    exposed_comm_ns: int
    compute_only_ns: int
    idle_ns: int

    @property
    def window_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def overlap_pct(self) -> float | None:
        return 100.0 * self.overlap_ns / self.comm_ns if self.comm_ns else None


def breakdown(compute: IntervalSet, comm: IntervalSet, start_ns: int, end_ns: int) -> Breakdown:
    c = clip(compute, start_ns, end_ns)
    m = clip(comm, start_ns, end_ns)
    overlap = intersect(c, m).length
    return Breakdown(
        start_ns=start_ns,
        end_ns=end_ns,
        compute_ns=c.length,
        comm_ns=m.length,
        overlap_ns=overlap,
        exposed_comm_ns=difference(m, c).length,
        compute_only_ns=difference(c, m).length,
        idle_ns=(end_ns - start_ns) - (c.length + m.length - overlap),
    )
