"""The critical path's walk on CPU-only ranks (analysis/path_walk.py): which collective a host
thread that waited for one resumed from, where the collective's span outlasts the wait."""

from __future__ import annotations

import numpy as np

# On a CPU-only rank a thread waiting for a collective resumes when the collective's result is
# ready, which Gloo signals before its span ends (the span goes on to copy results out: ms for
# tens of MB). A thread's first op after a gap of at least RESUME_GAP_NS that starts within
# the last RESUME_TAIL_SHARE of a collective's span (on another thread) resumed from it.
RESUME_GAP_NS = 50_000
RESUME_TAIL_SHARE = 0.1


def resumed_by_collectives(
    pred: np.ndarray, comm: np.ndarray, query: np.ndarray,
    gid: np.ndarray, lane: np.ndarray, start: np.ndarray, end: np.ndarray,
) -> None:  # fmt: skip
    """Set, in `pred`, the collective each resuming op (of the `query` rows) waited for: per
    collective span (`comm` rows), the earliest op of its group starting within its tail, on
    another thread, after a gap on its own thread. In place."""
    calls, ops = np.flatnonzero(comm), np.flatnonzero(query & ~comm)
    if calls.size == 0 or ops.size == 0:
        return
    base = np.full(int(gid.max()) + 1, np.iinfo(np.int64).max)
    np.minimum.at(base, gid, start)
    span = int((end - base[gid]).max()) + 2
    if (int(gid.max()) + 1) * span >= 2**62:  # keys would overflow: nothing is said
        return
    keys = gid[ops] * span + (start[ops] - base[gid[ops]])
    order = np.argsort(keys, kind="stable")
    keys, ops = keys[order], ops[order]
    tail_from = end[calls] - ((end[calls] - start[calls]) * RESUME_TAIL_SHARE).astype(np.int64)
    lo = np.maximum(start[calls] + 1, tail_from)
    at = np.searchsorted(keys, gid[calls] * span + (lo - base[gid[calls]]), side="left")
    found = at < ops.size
    op = np.where(found, ops[np.minimum(at, ops.size - 1)], -1)
    found &= gid[op] == gid[calls]
    found &= start[op] < end[calls]
    found &= lane[op] != lane[calls]
    own = pred[op]
    gap = start[op] - np.where(own >= 0, end[np.maximum(own, 0)], np.iinfo(np.int64).min // 2)
    found &= (own < 0) | (gap >= RESUME_GAP_NS)
    pred[op[found]] = calls[found]
