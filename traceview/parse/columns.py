"""Decoded event batches -> polars frames in the parse schema (integer nanoseconds)."""

from __future__ import annotations

from decimal import Decimal

import polars as pl

from traceview.parse.events import Event

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

EVENT_SCHEMA: dict[str, pl.DataType] = {
    "ts_ns": pl.Int64(),
    "dur_ns": pl.Int64(),
    "name": pl.Categorical(),
    "cat": CATEGORY,
    "pid": pl.Int64(),
    "tid": pl.Int64(),
    "correlation": pl.Int64(),
    "external_id": pl.Int64(),
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


def _nanoseconds(us: list[float | int | Decimal | None]) -> pl.Series:
    """Microseconds (up to three decimals) -> integer nanoseconds, exactly."""
    if any(isinstance(v, Decimal) for v in us[:1]):
        return pl.Series([None if v is None else int(v * 1000) for v in us], dtype=pl.Int64)
    floats = pl.Series(us, dtype=pl.Float64, strict=False)
    # Whole microseconds and the fraction apart: whole * 1000 may exceed float64's exact range.
    whole = floats.floor()
    return whole.cast(pl.Int64) * 1000 + ((floats - whole) * 1000).round().cast(pl.Int64)


def _category(cat: str) -> str:
    return _CATEGORY_OF.get(cat.lower(), "other")


def complete_events(batch: list[Event], first_row: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Frames of the batch's complete ("X") events and of the collective arguments among them."""
    xs = [e for e in batch if e.ph == "X"]
    cats: dict[str, str] = {}
    args = [e.args for e in xs]
    frame = pl.DataFrame(
        {
            "ts_ns": _nanoseconds([e.ts for e in xs]),
            "dur_ns": _nanoseconds([e.dur for e in xs]),
            "name": [e.name for e in xs],
            "cat": [cats.get(e.cat) or cats.setdefault(e.cat, _category(e.cat)) for e in xs],
            "pid": [e.pid if e.pid.__class__ is int else _id(e.pid) for e in xs],
            "tid": [e.tid if e.tid.__class__ is int else _id(e.tid) for e in xs],
            # Numbers may arrive as floats; strict=False lets polars make them integers.
            "correlation": [a.correlation if a is not None else None for a in args],
            "external_id": [
                (a.external_id if a.external_id is not None else a.external_id_old)
                if a is not None
                else None
                for a in args
            ],
            "device": [a.device if a is not None else None for a in args],
            "stream": [a.stream if a is not None else None for a in args],
        },
        schema=EVENT_SCHEMA,
        strict=False,
    )
    # Picked in polars (string tests on the few distinct names), then read from the structs.
    picked = frame.select(
        pl.arg_where(
            pl.col("name").cast(pl.String).str.starts_with(COMM_NAME_PREFIXES[0])
            | pl.any_horizontal(
                pl.col("name").cast(pl.String).str.starts_with(p) for p in COMM_NAME_PREFIXES[1:]
            )
        )
    ).to_series()
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


def thread_names(batch: list[Event], names: dict[tuple[int, int], list[str]]) -> None:
    """Collect "thread_name" metadata; a thread may be named more than once."""
    for e in [e for e in batch if e.ph == "M"]:
        if e.name == "thread_name" and e.args is not None and e.args.name:
            pid, tid = _id(e.pid), _id(e.tid)
            if pid is not None and tid is not None:
                names.setdefault((pid, tid), []).append(e.args.name)
