"""An independent, plain-Python computation of the overlap metrics, to check the library on
real traces: a sweep over interval boundaries with two counters, no shared code."""

from __future__ import annotations


def sweep_breakdown(compute, comm, lo, hi):
    """compute, comm: iterables of (start, end). Returns the metric lengths inside [lo, hi)."""
    points = []
    for s, e in compute:
        s, e = max(s, lo), min(e, hi)
        if e > s:
            points += [(s, 0, 1), (e, 0, -1)]
    for s, e in comm:
        s, e = max(s, lo), min(e, hi)
        if e > s:
            points += [(s, 1, 1), (e, 1, -1)]
    points.sort()
    depth = [0, 0]
    out = {"compute": 0, "comm": 0, "overlap": 0, "exposed_comm": 0, "compute_only": 0}
    prev = None
    for t, which, delta in points:
        if prev is not None and t > prev:
            span = t - prev
            c, m = depth[0] > 0, depth[1] > 0
            out["compute"] += span * c
            out["comm"] += span * m
            out["overlap"] += span * (c and m)
            out["exposed_comm"] += span * (m and not c)
            out["compute_only"] += span * (c and not m)
        depth[which] += delta
        prev = t
    busy = out["compute"] + out["comm"] - out["overlap"]
    out["idle"] = (hi - lo) - busy
    return out
