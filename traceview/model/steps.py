"""Profiler steps: the ProfilerStep#N spans, and which step a time point belongs to."""

from __future__ import annotations

import numpy as np
import polars as pl

from traceview.parse.names import PROFILER_STEP, named
from traceview.queries import collected


def step_spans(events: pl.DataFrame) -> pl.DataFrame:
    """One row per ProfilerStep#N CPU span, sorted by start."""
    name = pl.col("name").cast(pl.String)
    return collected(
        events.lazy()
        .filter(pl.col("cat").is_in(["user_annotation", "cpu_op"]) & named(events, PROFILER_STEP))
        .select(
            step=name.str.extract(PROFILER_STEP, 1).cast(pl.Int64, strict=False),
            span_start_ns=pl.col("ts_ns"),
            span_end_ns=pl.col("end_ns"),
        )
        .drop_nulls("step")  # a number too long for int64 (model/notes.py says so)
        .unique("step", keep="first")
        .sort("span_start_ns"),
        events.height,
    )


def assign_steps(frame: pl.DataFrame, key: str, spans: pl.DataFrame) -> pl.DataFrame:
    """Add `step`: the span that contains `frame[key]` (null outside every span): the last
    span (in start order) starting at or before it, if it ends after it. Searched from the key
    alone, in the frame's order: the frame may be millions of wide rows, costly to sort."""
    if spans.height == 0 or frame.height == 0:
        return frame.with_columns(step=pl.lit(None, pl.Int64))
    starts = spans["span_start_ns"].to_numpy()
    at = frame[key].fill_null(starts[0] - 1).to_numpy()  # a missing key: before every span
    latest = np.searchsorted(starts, at, side="right") - 1
    found = np.maximum(latest, 0)
    inside = (latest >= 0) & (at < spans["span_end_ns"].to_numpy()[found])
    step = pl.Series("step", spans["step"].to_numpy()[found], pl.Int64)
    return frame.with_columns(step.scatter(np.flatnonzero(~inside), None))
