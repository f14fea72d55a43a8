"""Interval algebra on half-open integer intervals [start, end), as numpy arrays.

A *set* is a pair (starts, ends) of sorted, disjoint, non-empty intervals, as `union` returns.
Every metric in traceview is built from these few functions.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]


class IntervalSet(NamedTuple):
    starts: Ints
    ends: Ints

    @property
    def length(self) -> int:
        return int((self.ends - self.starts).sum())

    def __len__(self) -> int:  # number of intervals
        return int(self.starts.size)


EMPTY = IntervalSet(np.empty(0, np.int64), np.empty(0, np.int64))


def union(starts: npt.ArrayLike, ends: npt.ArrayLike) -> IntervalSet:
    """Merge possibly overlapping intervals; empty ones vanish, touching ones join."""
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    keep = e > s
    if not keep.all():
        s, e = s[keep], e[keep]
    if s.size == 0:
        return EMPTY
    if not (s[1:] >= s[:-1]).all():  # timelines come sorted: no copies then
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    first = np.empty(s.size, dtype=bool)
    first[0] = True
    first[1:] = s[1:] > reach[:-1]
    heads = np.flatnonzero(first)
    return IntervalSet(s[heads], np.maximum.reduceat(e, heads))


def _sweep(a: IntervalSet, b: IntervalSet, in_a: bool, in_b: bool | None) -> IntervalSet:
    """Points covered by a (or not, per in_a) and by b (or not; None = either)."""
    points = np.concatenate([a.starts, a.ends, b.starts, b.ends])
    if points.size == 0:
        return EMPTY
    na, nb = len(a), len(b)
    # Sets are disjoint: each one covers a point 0 or 1 times, so one byte per step will do.
    one, zero = np.ones(1, np.int8), np.zeros(1, np.int8)
    da = np.concatenate([np.repeat(one, na), np.repeat(-one, na), np.repeat(zero, 2 * nb)])
    db = np.concatenate([np.repeat(zero, 2 * na), np.repeat(one, nb), np.repeat(-one, nb)])
    order = np.argsort(points, kind="stable")
    points = points[order]
    ca, cb = np.cumsum(da[order], dtype=np.int8), np.cumsum(db[order], dtype=np.int8)
    covered = (ca[:-1] > 0) == in_a
    if in_b is not None:
        covered &= (cb[:-1] > 0) == in_b
    return union(points[:-1][covered], points[1:][covered])


def intersect(a: IntervalSet, b: IntervalSet) -> IntervalSet:
    if len(a) == 0 or len(b) == 0:
        return EMPTY
    return _sweep(a, b, True, True)


def difference(a: IntervalSet, b: IntervalSet) -> IntervalSet:
    """a \\ b."""
    if len(a) == 0 or len(b) == 0:
        return a
    return _sweep(a, b, True, False)


def covered_length(cover: IntervalSet, starts: Ints, ends: Ints) -> Ints:
    """|[s, e) ∩ cover| for many intervals at once, from prefix sums over the cover."""
    if len(cover) == 0:
        return np.zeros(starts.size, dtype=np.int64)
    before = np.concatenate([[0], np.cumsum(cover.ends - cover.starts)])

    def upto(t: Ints) -> Ints:
        i = np.searchsorted(cover.starts, t, side="right") - 1
        inside = np.minimum(t, cover.ends[np.maximum(i, 0)]) - cover.starts[np.maximum(i, 0)]
        return np.where(i < 0, 0, before[np.maximum(i, 0)] + np.maximum(inside, 0))  # type: ignore[no-any-return]

    return upto(ends) - upto(starts)


def overlap_length(a: IntervalSet, b: IntervalSet) -> int:
    """|a ∩ b|, without building it: the smaller set measured against the larger one."""
    if len(a) == 0 or len(b) == 0:
        return 0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return int(covered_length(large, small.starts, small.ends).sum())


def clip(a: IntervalSet, lo: int, hi: int) -> IntervalSet:
    """a ∩ [lo, hi). Only the intervals that reach into the window are touched (found by
    binary search: a set is sorted), so a window costs its own intervals, not the whole set's —
    a trace of many steps is not quadratic in them."""
    first = int(np.searchsorted(a.ends, lo, side="right"))  # the first ending after lo
    last = int(np.searchsorted(a.starts, hi, side="left"))  # past the last starting before hi
    s = np.clip(a.starts[first:last], lo, hi)
    e = np.clip(a.ends[first:last], lo, hi)
    keep = e > s
    return IntervalSet(s[keep], e[keep])


def each_minus(starts: Ints, ends: Ints, cut: IntervalSet) -> tuple[Ints, Ints, Ints]:
    """[s, e) \\ cut for many intervals at once (they may overlap each other): the pieces left
    as (which interval each came from, piece starts, piece ends), in the intervals' order, each
    interval's pieces in time order — what `difference` gives one interval at a time, except
    that an interval no cut reaches into is kept as it is, an empty one too (a zero-length op
    stays a row of its own)."""
    starts, ends = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
    if len(cut) == 0:
        return np.arange(starts.size), starts, ends
    # The cuts reaching into [s, e): those ending after s and starting before e.
    first = np.searchsorted(cut.ends, starts, side="right")
    hits = np.maximum(np.searchsorted(cut.starts, ends, side="left") - first, 0)
    owner = np.repeat(np.arange(starts.size), hits + 1)  # k cuts leave at most k + 1 pieces
    offsets = np.concatenate([[0], np.cumsum(hits + 1)[:-1]])
    r = np.arange(owner.size) - offsets[owner]  # the piece's place in its interval
    at = first[owner] + r  # the cut just after the piece
    last = len(cut) - 1
    lo = np.where(r == 0, starts[owner], cut.ends[np.clip(at - 1, 0, last)])
    hi = np.where(r == hits[owner], ends[owner], cut.starts[np.clip(at, 0, last)])
    lo, hi = np.maximum(lo, starts[owner]), np.minimum(hi, ends[owner])
    keep = (hi > lo) | (hits[owner] == 0)
    return owner[keep], lo[keep], hi[keep]


def apart(n: int, *sets: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """What to add to the times of each of n groups ((group, starts, ends) of each set of
    intervals) so that each group's fall in a stretch of their own, in group order, a
    nanosecond apart: no interval of one group then meets (or touches) another's. A trace's
    events lie within two days of each other (parse/trace.py drops the rest), so tens of
    thousands of groups' stretches stay inside int64."""
    lo = np.full(n, np.iinfo(np.int64).max)
    hi = np.full(n, np.iinfo(np.int64).min)
    for group, starts, ends in sets:
        np.minimum.at(lo, group, np.minimum(starts, ends))
        np.maximum.at(hi, group, np.maximum(starts, ends))
    seen = lo <= hi
    span = np.where(seen, hi - lo, 0)
    base = np.concatenate(([0], np.cumsum(span + 1)[:-1]))
    return np.where(seen, base - lo, 0)
