"""The contract's spans, defined once: C (the union of compute), M (the union of
communication), overlap = C ∩ M and exposed = M \\ C — as lengths for the metrics (windows),
per call for the collectives, and as interval sets for the exported timeline and the charts."""

from __future__ import annotations

import numpy as np
import polars as pl

from traceview.algebra import IntervalSet, covered_length, difference, intersect, union
from traceview.queries import collected


def kind_set(intervals: pl.DataFrame, kind: str) -> IntervalSet:
    """The union of the intervals of one kind ("compute", "comm", "memory")."""
    # Lazily, so that only the two columns read are filtered (the intervals are wide).
    rows = collected(
        intervals.lazy().filter(pl.col("kind") == kind).select("ts_ns", "end_ns"), intervals.height
    )
    return union(rows["ts_ns"].to_numpy(), rows["end_ns"].to_numpy())


def overlap_and_exposed(compute: IntervalSet, comm: IntervalSet) -> tuple[IntervalSet, IntervalSet]:
    """(C ∩ M, M \\ C): communication hidden behind compute, and communication left exposed."""
    return intersect(compute, comm), difference(comm, compute)


def exposed_part(compute: IntervalSet, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """|[s, e) \\ C| for each call: the part of it no compute runs beside."""
    return (ends - starts) - covered_length(compute, starts, ends)  # type: ignore[no-any-return]


def overlap_spans(intervals: pl.DataFrame) -> tuple[IntervalSet, IntervalSet]:
    """(overlap, exposed) of one rank's intervals (INTERVALS_SCHEMA): where its communication
    runs beside compute, and where it runs alone."""
    return overlap_and_exposed(kind_set(intervals, "compute"), kind_set(intervals, "comm"))
