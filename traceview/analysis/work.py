"""Each rank's time per profiler step and name of work: the few rows a diff needs to say which
kernels (CPU ops on CPU runs) changed, kept beside the calls so that nobody reads every interval
of every rank again for it."""

from __future__ import annotations

import polars as pl

from traceview.analysis.stack import Stack
from traceview.model.batch import keyed, parts_of, per_part
from traceview.queries import collected
from traceview.tables import WORK_SCHEMA


def work_by_name(stack: Stack) -> list[pl.DataFrame]:
    """Each part's rows: per step and name, the summed durations of the step's intervals of
    that name (work outside every step is in no row)."""
    iv = stack.intervals
    found = collected(
        iv.lazy()
        .filter(pl.col("step").is_not_null())
        .group_by(*keyed(iv, "step"), pl.col("name").cast(pl.String))
        .agg(ns=(pl.col("end_ns") - pl.col("ts_ns")).sum())
        .select(
            *keyed(iv),
            rank=per_part([t.rank for t in stack.timelines], pl.Int32()),
            step="step",
            name="name",
            ns="ns",
        )
        .sort(keyed(iv, "step", "name")),
        iv.height,
    ).cast(WORK_SCHEMA)  # type: ignore[arg-type]
    return parts_of(found, stack.parts)
