"""Decoded event batches -> polars frames in the parse schema (integer nanoseconds)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from operator import attrgetter
from typing import Any

import numpy as np
import polars as pl

from traceview.parse.args import (
    COLLECTIVE_ARGS,
    COMM_ARGS_SCHEMA,
    EVENT_ARGS,
    EVENT_ARGS_SCHEMA,
    LAUNCH_ARGS,
    LAUNCH_SCHEMA,
    NO_RAW,
)
from traceview.parse.categories import CATEGORY, category
from traceview.parse.events import THREAD_NAME, CompleteEvent, MetadataEvent
from traceview.parse.fast import COLUMNS as SCANNED
from traceview.parse.fast import NONE, ScannedBatch
from traceview.parse.names import KEEPS_ARGS
from traceview.parse.readers import INT64_MAX, READERS, raw_texts, whole

# A batch of complete events, as either path of the parser hands it on: times in integer
# nanoseconds (null where unreadable), categories folded.
BATCH_SCHEMA: dict[str, pl.DataType] = {
    "ts_ns": pl.Int64(),
    "dur_ns": pl.Int64(),
    "name": pl.Categorical(),
    "cat": CATEGORY,
    "pid": pl.Int64(),
    "tid": pl.Int64(),
    **EVENT_ARGS_SCHEMA,
    **LAUNCH_SCHEMA,
}


def exact_ns(value: object) -> int | None:
    """Microseconds written as a decimal or a string -> integer nanoseconds, exactly."""
    try:
        if value.__class__ is Decimal:  # the usual case: decoded as one (the hot path)
            ns = int(value * 1000)  # type: ignore[operator]
        else:
            ns = int(Decimal(value if value.__class__ is not float else repr(value)) * 1000)  # type: ignore[arg-type]
    except (ArithmeticError, ValueError, TypeError):
        return None
    return ns if -INT64_MAX <= ns <= INT64_MAX else None


# Times beyond this many microseconds (about 292 years) do not fit int64 nanoseconds.
MAX_US = INT64_MAX // 1000 - 1


def nanoseconds(us: pl.Expr) -> pl.Expr:
    """Microseconds (up to three decimals) -> integer nanoseconds, exactly: the whole
    microseconds and the fraction apart, as whole * 1000 may exceed float64's exact range.
    Null where the value does not fit (1e300, inf)."""
    whole = us.floor()
    ns = whole.cast(pl.Int64, strict=False) * 1000 + ((us - whole) * 1000).round().cast(
        pl.Int64, strict=False
    )
    return pl.when(us.abs() <= MAX_US).then(ns)


def _ids(values: list[object]) -> pl.Series:
    try:
        return pl.Series(values, dtype=pl.Int64, strict=True)  # the usual case: ints
    except (TypeError, OverflowError):
        pass
    ids = pl.Series(values, dtype=pl.Int64, strict=False)  # odd values become null ...
    if ids.null_count() > values.count(None):  # ... and are read one by one
        at = ids.is_null().arg_true().to_list()
        ids = ids.scatter(at, pl.Series([whole(values[i]) for i in at], dtype=pl.Int64))
    return ids


def _event_arg(args: Sequence[object], column: str) -> pl.Series:
    get = attrgetter(column)
    return _ids([get(a) if a is not None else None for a in args])


def _launch_arg(args: Sequence[object], column: str) -> list[str | None]:
    get = attrgetter(column)
    return raw_texts([get(a) if a is not None else None for a in args])


def complete_events(xs: list[CompleteEvent], first_row: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Frames of complete ("X") events and of the collective arguments among them."""
    # Hot path: one list comprehension per column, everything else vectorised in polars.
    args = [e.args for e in xs]
    ts = [e.ts for e in xs]
    # Epoch timestamps with fractions (decoded as decimals) and timestamps written as strings
    # are converted exactly; one clock per trace, so the first timestamp tells.
    exact = bool(ts) and isinstance(next((v for v in ts if v is not None), None), Decimal | str)
    names = [e.name for e in xs]
    cats = [e.cat for e in xs]
    frame = pl.DataFrame(
        {
            "ts_us": None if exact else ts,
            "ts_exact_ns": [None if v is None else exact_ns(v) for v in ts] if exact else None,
            "dur_us": [e.dur for e in xs],  # strings like "12.5" are read by polars (strict=False)
            "name": names,
            "cat": cats,
            "pid": _ids([e.pid for e in xs]),
            "tid": _ids([e.tid for e in xs]),
            **{arg.column: _event_arg(args, arg.column) for arg in EVENT_ARGS},
            **{arg.column: _launch_arg(args, arg.column) for arg in LAUNCH_ARGS},
        },
        schema=_DECODED_SCHEMA,
        strict=False,
    ).select(
        ts_ns=pl.coalesce("ts_exact_ns", nanoseconds(pl.col("ts_us"))),
        dur_ns=nanoseconds(pl.col("dur_us")),
        name="name",
        cat=category(pl.col("cat"), cats),
        **{c: c for c in ("pid", "tid", *EVENT_ARGS_SCHEMA, *LAUNCH_SCHEMA)},
    )
    comm_names = [n for n in set(names) if KEEPS_ARGS.match(n)]
    picked: pl.Series | list[int] = frame["name"].is_in(comm_names).arg_true() if comm_names else []
    comm = [(first_row + i, a) for i in picked if (a := args[i]) is not None]
    return frame, comm_frame(comm)


# The pure-Python path's columns as decoded, before the times become nanoseconds.
_DECODED_SCHEMA: dict[str, pl.DataType] = {
    "ts_us": pl.Float64(),
    "ts_exact_ns": pl.Int64(),  # set instead of ts_us for epoch timestamps with fractions
    "dur_us": pl.Float64(),
    "name": pl.Categorical(),
    "cat": pl.Categorical(),  # as written: "kernel", "Kernel", "cuda_runtime", ...
    "pid": pl.Int64(),
    "tid": pl.Int64(),
    **EVENT_ARGS_SCHEMA,
    **LAUNCH_SCHEMA,
}


def comm_frame(comm: list[tuple[int, Any]]) -> pl.DataFrame:
    """Row -> collective arguments, from (row, decoded Args) of the communication events."""
    columns: dict[str, list[Any]] = {"row": [r for r, _ in comm]}
    decoded = [a for _, a in comm]
    for arg in COLLECTIVE_ARGS:
        read = READERS[arg.reading]
        values: list[Any] = list(map(attrgetter(arg.column), decoded))
        if arg.reading == "raw":
            values = raw_texts(values)
        else:  # most args are absent from most traces' calls: read only what is there
            values = [None if v is None or v is NO_RAW else read(v) for v in values]
        if arg.fills is None:
            columns[arg.column] = values
        else:
            columns[arg.fills] = [
                mine if mine is not None else other
                for mine, other in zip(columns[arg.fills], values, strict=True)
            ]
    return pl.DataFrame(columns, schema=COMM_ARGS_SCHEMA, strict=False)


# The scanner's integer columns, its NONE made null: built once (a small trace's reading
# costs a tenth of a millisecond more where they are built anew).
_SCANNED_INTS = [c for c in SCANNED if c not in ("name", "cat")]
_NONE_AS_NULL = [pl.when(pl.col(c) != NONE).then(pl.col(c)).alias(c) for c in _SCANNED_INTS]


def scanned_events(
    batches: Sequence[ScannedBatch], first_row: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The same frames from the compiled scanner's columns, batches in trace order: missing
    values become nulls, ids of names and categories their strings, and ids the scanner left to
    Python are read as the pure-Python path reads them."""
    # A column apiece: polars keeps a column's numpy memory where it can (no nulls to mark), and
    # a row of one 2-D array would keep the whole array, every other column, alive with it.
    table = [np.concatenate([b.columns[i] for b in batches]) for i in range(len(SCANNED))]
    last = batches[-1]  # its tables of distinct strings hold every earlier batch's
    ints = {c: pl.Series(c, table[i]) for i, c in enumerate(SCANNED) if c in _SCANNED_INTS}
    launches = np.concatenate([b.launch_positions for b in batches], axis=1)
    frame = (
        pl.DataFrame(ints)
        .select(_NONE_AS_NULL)
        .with_columns(
            *last.kept.launch_columns(launches),
            name=last.names.gather(table[SCANNED.index("name")]),
            cat=last.categories.gather(table[SCANNED.index("cat")]),
        )
        .select(list(BATCH_SCHEMA))
    )
    comm_rows: list[np.ndarray] = []
    odd: dict[str, list[tuple[int, object]]] = {}
    at = 0  # the batch's first row in the frame
    for b in batches:
        comm_rows.append(b.comm_rows + (first_row + at))
        for column, found in b.odd_ids.items():
            odd.setdefault(column, []).extend((at + r, v) for r, v in found)
        at += b.rows
    for column, found in odd.items():
        rows = [r for r, _ in found]
        frame = frame.with_columns(frame[column].scatter(rows, _ids([v for _, v in found])))
    positions = np.concatenate([b.comm_positions for b in batches], axis=1)
    return frame, last.kept.frame(np.concatenate(comm_rows), positions)


def thread_names(metadata: list[MetadataEvent], names: dict[tuple[int, int], list[str]]) -> None:
    """Collect "thread_name" metadata; a thread may be named more than once."""
    for e in metadata:
        if e.name == THREAD_NAME and e.args is not None and e.args.name:
            pid, tid = whole(e.pid), whole(e.tid)
            if pid is not None and tid is not None:
                names.setdefault((pid, tid), []).append(e.args.name)
