"""Each rank's time per profiler step and name of work: the few rows a diff needs to say which
kernels (CPU ops on CPU runs) changed, kept beside the calls so that nobody reads every interval
of every rank again for it."""

from __future__ import annotations

import polars as pl

from traceview.model import Timeline
from traceview.queries import collected
from traceview.tables import WORK_SCHEMA


def work_by_name(timeline: Timeline) -> pl.DataFrame:
    """Per step and name: the summed durations of the step's intervals of that name (work
    outside every step is in no row)."""
    return collected(
        timeline.intervals.lazy()
        .filter(pl.col("step").is_not_null())
        .group_by("step", pl.col("name").cast(pl.String))
        .agg(ns=(pl.col("end_ns") - pl.col("ts_ns")).sum())
        .select(rank=pl.lit(timeline.rank, pl.Int32), step="step", name="name", ns="ns")
        .sort("step", "name"),
        timeline.intervals.height,
    ).cast(WORK_SCHEMA)  # type: ignore[arg-type]
