"""Collective calls on the CPU: the c10d op, record_param_comms and nccl:* spans that launch
one collective, nested in each other, merged into one row with the best of their arguments."""

from __future__ import annotations

import polars as pl

from traceview.model import messages
from traceview.model.names import COMM_CALL, collective_of

CALLS_SCHEMA = {
    "pid": pl.Int64,
    "tid": pl.Int64,
    "call_start_ns": pl.Int64,
    "call_end_ns": pl.Int64,
    "call_collective": pl.String,
    "call_bytes": pl.Int64,
    "call_pg": pl.String,
    "call_seq": pl.Int64,
}

# Which op names the collective best, and which records the size best (lower wins).
_NAME_RANK = {"c10d": 0, "record_param_comms": 1, "span": 2}
_BYTES_RANK = {"record_param_comms": 0, "span": 1, "c10d": 2}


def comm_call_ops(events: pl.DataFrame, comm_args: pl.DataFrame) -> pl.DataFrame:
    """Every CPU op that is part of launching a collective, with its own arguments."""
    ops = events.filter(
        pl.col("cat").is_in(["cpu_op", "user_annotation"])
        & pl.col("name").cast(pl.String).str.contains(COMM_CALL)
    ).join(comm_args, on="row", how="left")
    if ops.height == 0:
        return ops.with_columns(
            source=pl.lit(None, pl.String),
            op_collective=pl.lit(None, pl.String),
            op_bytes=pl.lit(None, pl.Int64),
        )
    name = pl.col("name").cast(pl.String)
    source = (
        pl.when(name == "record_param_comms")
        .then(pl.lit("record_param_comms"))
        .when(name.str.starts_with("c10d::"))
        .then(pl.lit("c10d"))
        .otherwise(pl.lit("span"))
    )
    rows = ops.with_columns(source=source).to_dicts()
    collectives, sizes = [], []
    for r in rows:
        label = r["collective_name"] if r["source"] == "record_param_comms" else str(r["name"])
        collectives.append(collective_of(label))
        sizes.append(
            messages.from_counts(r["in_nelems"], r["out_nelems"], r["dtype"])
            or messages.from_shapes(r["input_dims"], r["input_type"])
        )
    return ops.with_columns(
        source=source,
        op_collective=pl.Series(collectives, dtype=pl.String),
        op_bytes=pl.Series(sizes, dtype=pl.Int64),
    )


def merge_nested(ops: pl.DataFrame) -> pl.DataFrame:
    """One row per outermost call on a thread, carrying the best arguments of the ops inside."""
    if ops.height == 0:
        return pl.DataFrame(schema=CALLS_SCHEMA)
    ops = ops.sort("pid", "tid", "ts_ns", -pl.col("end_ns"))
    reach = pl.col("end_ns").cum_max().shift(1).over("pid", "tid")
    ops = ops.with_columns(call=(reach.is_null() | (pl.col("ts_ns") >= reach)).cum_sum())
    name_rank = pl.col("source").replace_strict(_NAME_RANK, return_dtype=pl.Int8)
    bytes_rank = pl.col("source").replace_strict(_BYTES_RANK, return_dtype=pl.Int8)

    def best(col: str, rank: pl.Expr) -> pl.Expr:
        return pl.col(col).sort_by(rank).drop_nulls().first()

    return (
        ops.group_by("call", maintain_order=True)
        .agg(
            pl.col("pid").first(),
            pl.col("tid").first(),
            call_start_ns=pl.col("ts_ns").min(),
            call_end_ns=pl.col("end_ns").max(),
            call_collective=best("op_collective", name_rank),
            call_bytes=best("op_bytes", bytes_rank),
            call_pg=best("pg_name", bytes_rank),
            call_seq=best("seq", bytes_rank),
        )
        .drop("call")
        .cast(CALLS_SCHEMA)  # type: ignore[arg-type]
    )


def attach_calls(launches: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """For rows with launch_ns/launch_pid/launch_tid: the call that encloses the launch."""
    if calls.height == 0:
        return launches.with_columns(
            pl.lit(None, dtype).alias(col)
            for col, dtype in CALLS_SCHEMA.items()
            if col not in ("pid", "tid")
        )
    keyed = launches.with_columns(
        _key=pl.col("launch_ns").fill_null(-1),
        _pid=pl.col("launch_pid").fill_null(-1),
        _tid=pl.col("launch_tid").fill_null(-1),
    ).sort("_key")
    right = calls.rename({"pid": "_pid", "tid": "_tid"}).sort("call_start_ns")
    joined = keyed.join_asof(
        right,
        left_on="_key",
        right_on="call_start_ns",
        by=["_pid", "_tid"],
        strategy="backward",
        check_sortedness=False,  # both sides are sorted by key; polars cannot verify per group
    )
    inside = pl.col("launch_ns") <= pl.col("call_end_ns")
    return joined.with_columns(
        pl.when(inside).then(pl.col(c)).otherwise(None).alias(c)
        for c in CALLS_SCHEMA
        if c not in ("pid", "tid")
    ).drop("_key", "_pid", "_tid")
