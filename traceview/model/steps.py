"""Profiler steps: the ProfilerStep#N spans, and which step a time point belongs to."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from traceview.model.batch import keyed, part_numbers
from traceview.parse.names import PROFILER_STEP, named
from traceview.queries import collected

_BEFORE_EVERY_SPAN = np.iinfo(np.int64).min


def step_spans(events: pl.DataFrame) -> pl.DataFrame:
    """One row per ProfilerStep#N CPU span of each trace (model/batch.py), sorted by start:
    (part,) step, span_start_ns, span_end_ns."""
    name = pl.col("name").cast(pl.String)
    return collected(
        events.lazy()
        .filter(pl.col("cat").is_in(["user_annotation", "cpu_op"]) & named(events, PROFILER_STEP))
        .select(
            *keyed(events),
            step=name.str.extract(PROFILER_STEP, 1).cast(pl.Int64, strict=False),
            span_start_ns=pl.col("ts_ns"),
            span_end_ns=pl.col("end_ns"),
        )
        .drop_nulls("step")  # a number too long for int64 (model/notes.py says so)
        .unique(keyed(events, "step"), keep="first")
        .sort(keyed(events, "span_start_ns")),
        events.height,
    )


def assign_steps(
    frame: pl.DataFrame, key: str | Sequence[str], spans: pl.DataFrame
) -> pl.DataFrame:
    """Add `step`: the span of the row's part that contains its `key` (null outside every
    span): the last span (in start order) starting at or before it, if it ends after it.
    `key`: one column, or each part's (by part number). Searched from the key alone, in the
    frame's order: the frame may be millions of wide rows, costly to sort."""
    if spans.height == 0 or frame.height == 0:
        return frame.with_columns(step=pl.lit(None, pl.Int64))
    keys = [key] if isinstance(key, str) else list(key)
    span_parts = part_numbers(spans)
    starts, ends = spans["span_start_ns"].to_numpy(), spans["span_end_ns"].to_numpy()
    numbers = spans["step"].to_numpy()
    parts = part_numbers(frame)
    times: dict[str, np.ndarray] = {}  # each key column's times, a missing one before all
    step = np.zeros(frame.height, dtype=np.int64)
    inside = np.zeros(frame.height, dtype=bool)
    for part, rows in _rows_by_part(parts):
        lo, hi = (
            (0, spans.height)
            if span_parts is None
            else np.searchsorted(span_parts, [part, part + 1])
        )
        if lo == hi:
            continue
        column = keys[part] if len(keys) > 1 else keys[0]
        if column not in times:
            times[column] = frame[column].fill_null(_BEFORE_EVERY_SPAN).to_numpy()
        at = times[column][rows]
        latest = np.searchsorted(starts[lo:hi], at, side="right") - 1
        found = lo + np.maximum(latest, 0)
        inside[rows] = (latest >= 0) & (at < ends[found])
        step[rows] = numbers[found]
    steps = pl.Series("step", step, pl.Int64)
    return frame.with_columns(steps.scatter(np.flatnonzero(~inside), None))


def _rows_by_part(parts: np.ndarray | None) -> list[tuple[int, slice | np.ndarray]]:
    """(part, its rows) for each part present (one part: every row, not listed)."""
    if parts is None:
        return [(0, slice(None))]
    if parts[0] == parts.min() == parts.max():
        return [(int(parts[0]), slice(None))]
    return [(int(p), np.flatnonzero(parts == p)) for p in np.unique(parts)]
