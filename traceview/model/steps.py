"""Profiler steps: the ProfilerStep#N spans, and which step a time point belongs to."""

from __future__ import annotations

import polars as pl

from traceview.parse.names import PROFILER_STEP, named


def step_spans(events: pl.DataFrame) -> pl.DataFrame:
    """One row per ProfilerStep#N CPU span, sorted by start."""
    name = pl.col("name").cast(pl.String)
    return (
        events.lazy()
        .filter(pl.col("cat").is_in(["user_annotation", "cpu_op"]) & named(events, PROFILER_STEP))
        .select(
            step=name.str.extract(PROFILER_STEP, 1).cast(pl.Int64, strict=False),
            span_start_ns=pl.col("ts_ns"),
            span_end_ns=pl.col("end_ns"),
        )
        .drop_nulls("step")  # a number too long for int64 (model/notes.py says so)
        .unique("step", keep="first")
        .sort("span_start_ns")
        .collect()
    )


def assign_steps(frame: pl.DataFrame, key: str, spans: pl.DataFrame) -> pl.DataFrame:
    """Add `step`: the span that contains `frame[key]` (null outside every span)."""
    if spans.height == 0:
        return frame.with_columns(step=pl.lit(None, pl.Int64))
    keyed = frame.with_columns(_key=pl.col(key).fill_null(-1)).sort("_key")
    joined = keyed.join_asof(spans, left_on="_key", right_on="span_start_ns", strategy="backward")
    inside = pl.col(key) < pl.col("span_end_ns")
    return joined.with_columns(step=pl.when(inside).then(pl.col("step"))).drop(
        "_key", "span_start_ns", "span_end_ns"
    )
