"""Several ranks' traces modelled together, each row naming its trace by `part` (its place in
the batch). A small rank's model is a hundred small queries, each costing more than its rows
(docs/performance.md); one query over many ranks' rows costs about what one rank's does. A
single trace is a batch of one, whose tables have no `part` (every key is then the one the
trace alone needs: a large trace's joins and sorts cost no more), so the model has one way to
do each thing: every key of a row's own trace is `keyed(frame, ...)`."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import msgspec
import numpy as np
import polars as pl

from traceview.parse import Trace
from traceview.tables import PART_TYPE

PART = "part"


class Batch(msgspec.Struct, frozen=True, kw_only=True):
    """The traces, and their events and collectives' arguments as one table each."""

    traces: tuple[Trace, ...]  # each rank's own description: meta, thread names, events
    events: pl.DataFrame  # every trace's events (with `part` where there are several)
    # every trace's kept args (parse/names.py KEEPS_ARGS: collectives' and gradients'), likewise
    comm_args: pl.DataFrame


def batch_of(traces: Sequence[Trace]) -> Batch:
    """One batch of traces whose events have the same columns (one trace: its own tables)."""
    if len(traces) == 1:
        (trace,) = traces
        return Batch(traces=(trace,), events=trace.events, comm_args=trace.comm_args)
    return Batch(
        traces=tuple(traces),
        events=stacked([t.events for t in traces]),
        comm_args=stacked([t.comm_args for t in traces]),
    )


def stacked(frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """The frames one under another, each row naming its frame by `part`."""
    parts = np.repeat(np.arange(len(frames), dtype=np.uint32), [f.height for f in frames])
    return pl.concat(frames).with_columns(pl.Series(PART, parts, PART_TYPE))


def keyed(frame: pl.DataFrame | pl.LazyFrame, *keys: str) -> list[str]:
    """The keys of a row within its own trace: `part` first where the table has one."""
    return [PART, *keys] if PART in frame.collect_schema().names() else list(keys)


def within_part(expr: pl.Expr, frame: pl.DataFrame) -> pl.Expr:
    """`expr` over each part's rows (over the whole table in a batch of one)."""
    return expr.over(PART) if PART in frame.columns else expr


def with_part_type(schema: dict[str, pl.DataType], like: pl.DataFrame) -> dict[str, pl.DataType]:
    """An empty table's schema, with `part` first where the batch's tables have one."""
    return {PART: PART_TYPE, **schema} if PART in like.columns else dict(schema)


def part_numbers(frame: pl.DataFrame) -> np.ndarray | None:
    """Each row's part (None in a batch of one)."""
    return frame[PART].to_numpy() if PART in frame.columns else None


def per_part(values: Sequence[object], dtype: pl.DataType) -> pl.Expr:
    """Each row's value of a per-trace list, by its part."""
    if len(values) == 1:
        return pl.lit(values[0], dtype)
    return pl.col(PART).replace_strict(list(range(len(values))), list(values), return_dtype=dtype)


def parts_of(frame: pl.DataFrame, n: int) -> list[pl.DataFrame]:
    """The frame's rows of each of n parts, without the `part` column: a slice each, not a
    copy, as the frame keeps each part's rows together and in part order."""
    if PART not in frame.columns:
        return [frame]
    part = frame[PART].to_numpy()
    assert (part[1:] >= part[:-1]).all(), "a batch's rows kept in part order"
    edges = part_edges(part, n).tolist()
    rows = frame.drop(PART)
    return [rows.slice(a, b - a) for a, b in pairwise(edges)]


def part_edges(part: np.ndarray, parts: int) -> np.ndarray:
    """Where each part's rows begin, and where the last ends, in rows kept in part order."""
    return np.searchsorted(part, np.arange(parts + 1), side="left")
