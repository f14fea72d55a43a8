"""Decoded event batches -> polars frames in the parse schema (integer nanoseconds)."""

from __future__ import annotations

from decimal import Decimal

import polars as pl

from traceview.parse.events import CompleteEvent, MetadataEvent

# Kineto has renamed its categories over the years; fold them onto one closed set.
CATEGORY = pl.Enum(
    [
        "kernel",
        "memcpy",
        "memset",
        "runtime",
        "cpu_op",
        "user_annotation",
        "gpu_annotation",
        "python",
        "other",
    ]
)
_CATEGORY_OF = {
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",
    "gpu_memset": "memset",
    "memset": "memset",
    "cuda_runtime": "runtime",
    "cuda_driver": "runtime",
    "runtime": "runtime",
    "cpu_op": "cpu_op",
    "operator": "cpu_op",
    "user_annotation": "user_annotation",
    "gpu_user_annotation": "gpu_annotation",
    "python_function": "python",
    "python": "python",
}

# Ops whose arguments describe a collective: only these keep their (large) shape arguments.
COMM_NAME_PREFIXES = ("nccl", "rccl", "gloo:", "c10d::", "record_param_comms", "_c10d_functional::")

# Per batch: only what list comprehensions give; conversions run once on whole columns.
BATCH_SCHEMA: dict[str, pl.DataType] = {
    "ts_us": pl.Float64(),
    "ts_exact_ns": pl.Int64(),  # set instead of ts_us for epoch timestamps with fractions
    "dur_us": pl.Float64(),
    "name": pl.Categorical(),
    "cat": pl.Categorical(),  # as written: "kernel", "Kernel", "cuda_runtime", ...
    "pid": pl.Int64(),
    "tid": pl.Int64(),
    "correlation": pl.Int64(),
    "device": pl.Int64(),
    "stream": pl.Int64(),
}
COMM_ARGS_SCHEMA: dict[str, pl.DataType] = {
    "row": pl.Int64(),
    "collective_name": pl.String(),
    "in_nelems": pl.Int64(),
    "out_nelems": pl.Int64(),
    "dtype": pl.String(),
    "pg_name": pl.String(),
    "pg_desc": pl.String(),
    "pg_ranks": pl.String(),
    "group_size": pl.Int64(),
    "seq": pl.Int64(),
    "input_dims": pl.String(),
    "input_type": pl.String(),
}


def _id(value: object) -> int | None:
    """pid/tid as an integer: old traces write "stream 7" or "25738"; Kineto's own rows "Spans"."""
    if value is None or value.__class__ is int:
        return value  # type: ignore[return-value]
    digits = "".join(ch for ch in str(value) if ch.isdigit())
    return int(digits) if digits else None


def nanoseconds(us: pl.Expr) -> pl.Expr:
    """Microseconds (up to three decimals) -> integer nanoseconds, exactly: the whole
    microseconds and the fraction apart, as whole * 1000 may exceed float64's exact range."""
    whole = us.floor()
    return whole.cast(pl.Int64) * 1000 + ((us - whole) * 1000).round().cast(pl.Int64)


def category(raw: pl.Expr) -> pl.Expr:
    """Kineto's category names, folded onto CATEGORY (evaluated once per distinct name)."""
    return (
        raw.cast(pl.String)
        .str.to_lowercase()
        .replace_strict(_CATEGORY_OF, default="other", return_dtype=CATEGORY)
    )


def _ids(values: list[object]) -> pl.Series:
    ids = pl.Series(values, dtype=pl.Int64, strict=False)  # strings become null ...
    if ids.null_count() > values.count(None):  # ... and are read one by one
        at = ids.is_null().arg_true().to_list()
        ids = ids.scatter(at, pl.Series([_id(values[i]) for i in at], dtype=pl.Int64))
    return ids


def complete_events(xs: list[CompleteEvent], first_row: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Frames of complete ("X") events and of the collective arguments among them."""
    # Hot path: one list comprehension per column, everything else vectorised in polars.
    args = [e.args for e in xs]
    ts = [e.ts for e in xs]
    exact = bool(ts) and isinstance(ts[0], Decimal)
    names = [e.name for e in xs]
    frame = pl.DataFrame(
        {
            "ts_us": None if exact else ts,
            "ts_exact_ns": [None if v is None else int(v * 1000) for v in ts] if exact else None,
            "dur_us": [e.dur for e in xs],
            "name": names,
            "cat": [e.cat for e in xs],
            "pid": _ids([e.pid for e in xs]),
            "tid": _ids([e.tid for e in xs]),
            # Numbers may arrive as floats; strict=False lets polars make them integers.
            "correlation": [a.correlation if a is not None else None for a in args],
            "device": [a.device if a is not None else None for a in args],
            "stream": [a.stream if a is not None else None for a in args],
        },
        schema=BATCH_SCHEMA,
        strict=False,
    )
    comm_names = {n for n in set(names) if n.startswith(COMM_NAME_PREFIXES)}
    picked: pl.Series | list[int] = (
        frame["name"].is_in(list(comm_names)).arg_true() if comm_names else []
    )
    comm = [(first_row + i, a) for i in picked if (a := args[i]) is not None]
    comm_frame = pl.DataFrame(
        {
            "row": [r for r, _ in comm],
            "collective_name": [a.collective_name for _, a in comm],
            "in_nelems": [a.in_nelems for _, a in comm],
            "out_nelems": [a.out_nelems for _, a in comm],
            "dtype": [a.dtype for _, a in comm],
            "pg_name": [a.pg_name for _, a in comm],
            "pg_desc": [a.pg_desc for _, a in comm],
            "pg_ranks": [a.pg_ranks for _, a in comm],
            "group_size": [a.group_size for _, a in comm],
            "seq": [a.seq for _, a in comm],
            "input_dims": [bytes(a.input_dims).decode() or None for _, a in comm],
            "input_type": [bytes(a.input_type).decode() or None for _, a in comm],
        },
        schema=COMM_ARGS_SCHEMA,
        strict=False,
    )
    return frame, comm_frame


def thread_names(metadata: list[MetadataEvent], names: dict[tuple[int, int], list[str]]) -> None:
    """Collect "thread_name" metadata; a thread may be named more than once."""
    for e in metadata:
        if e.name == "thread_name" and e.args is not None and e.args.name:
            pid, tid = _id(e.pid), _id(e.tid)
            if pid is not None and tid is not None:
                names.setdefault((pid, tid), []).append(e.args.name)
