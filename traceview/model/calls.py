"""Collective calls on the CPU: the c10d op, record_param_comms and nccl:* spans that launch
one collective, nested in each other, merged into one row with the best of their arguments."""

from __future__ import annotations

from typing import Any

import polars as pl

from traceview.model import messages
from traceview.model.batch import keyed, with_part_type
from traceview.model.distinct import per_distinct
from traceview.parse.names import COMM_CALL, collective_of, named
from traceview.queries import collected
from traceview.tables import CPU_CALLS_SCHEMA

CALL_FIELDS = [c for c in CPU_CALLS_SCHEMA if c.startswith("call_")]

# Which op names the collective best, and which carries the recorded arguments (lower wins).
_NAME_RANK = {"c10d": 0, "record_param_comms": 1, "span": 2}
_ARGS_RANK = {"record_param_comms": 0, "span": 1, "c10d": 2}
# How well a size is known: element counts, then the c10d op's own tensors (output and input
# in its argument order), then the input tensor that record_param_comms or a span records.
_COUNTS, _C10D_SHAPES, _INPUT_SHAPE = 0, 1, 2


def comm_call_ops(events: pl.DataFrame, comm_args: pl.DataFrame) -> pl.DataFrame:
    """Every CPU op that is part of launching a collective, with its own arguments (`events`
    and `comm_args` of a batch, model/batch.py)."""
    ops = collected(
        events.lazy()
        .filter(pl.col("cat").is_in(["cpu_op", "user_annotation"]) & named(events, COMM_CALL))
        .select(*keyed(events, "row"), "name", "pid", "tid", "ts_ns", "end_ns"),
        events.height,
    ).join(comm_args, on=keyed(events, "row"), how="left")
    return per_distinct(ops, _OP_INPUTS, _op_fields, _OP_FIELDS)


# The columns an op's collective and sizes are read from (its name, the args of parse/args.py),
# and what is read: the collective, and each side's bytes with how well they are known; how
# well the op names its collective and carries the arguments (_NAME_RANK, _ARGS_RANK).
_OP_INPUTS = ("name", "collective_name", *messages.SIZE_ARGS)
_OP_FIELDS: dict[str, pl.DataType] = {
    "op_collective": pl.String(),
    "op_in": pl.Int64(),
    "op_in_q": pl.Int8(),
    "op_out": pl.Int64(),
    "op_out_q": pl.Int8(),
    "op_elem": pl.Int64(),
    "op_name_rank": pl.Int8(),
    "op_args_rank": pl.Int8(),
}


def _op_fields(name: str, collective_name: str | None, *size_args: Any) -> tuple[object, ...]:
    """One op's collective, its input and output bytes each with how well it is known, its
    element size (`size_args`: messages.SIZE_ARGS), and its ranks as a source."""
    op = str(name)
    source = _source_of(op)
    label = collective_name if source == "record_param_comms" else op
    shape_q = _C10D_SHAPES if source == "c10d" else _INPUT_SHAPE
    *sides, elem = messages.recorded_sizes(op, *size_args)
    known = [(size, _COUNTS if counted else shape_q) for size, counted in sides]
    ranks = (_NAME_RANK[source], _ARGS_RANK[source])
    return (collective_of(label), *known[0], *known[1], elem, *ranks)


def _source_of(op: str) -> str:
    """Which kind of op launches the collective: _NAME_RANK's and _ARGS_RANK's keys."""
    if op == "record_param_comms":
        return op
    return "c10d" if op.startswith("c10d::") else "span"


def merge_nested(ops: pl.DataFrame) -> pl.DataFrame:
    """One row per outermost call on a thread, carrying the best arguments of the ops inside."""
    if ops.height == 0:
        return pl.DataFrame(schema=with_part_type(CPU_CALLS_SCHEMA, ops))
    ops = ops.sort(*keyed(ops, "pid", "tid", "ts_ns"), -pl.col("end_ns"))
    reach = pl.col("end_ns").cum_max().shift(1).over(keyed(ops, "pid", "tid"))
    ops = ops.with_columns(call=(reach.is_null() | (pl.col("ts_ns") >= reach)).cum_sum())
    name_rank, args_rank = pl.col("op_name_rank"), pl.col("op_args_rank")

    def best(col: str, rank: pl.Expr) -> pl.Expr:
        return pl.col(col).sort_by(rank).drop_nulls().first()

    return (
        ops.group_by("call", maintain_order=True)
        .agg(
            *(pl.col(c).first() for c in keyed(ops, "pid")),
            pl.col("tid").first(),
            call_start_ns=pl.col("ts_ns").min(),
            call_end_ns=pl.col("end_ns").max(),
            call_collective=best("op_collective", name_rank),
            call_in_bytes=best("op_in", pl.col("op_in_q")),
            call_out_bytes=best("op_out", pl.col("op_out_q")),
            call_elem_bytes=best("op_elem", args_rank),
            call_group_size=best("group_size", args_rank),
            call_pg=best("pg_name", args_rank),
            call_pg_desc=best("pg_desc", args_rank),
            call_seq=best("seq", args_rank),
        )
        .drop("call")
        .cast(with_part_type(CPU_CALLS_SCHEMA, ops))  # type: ignore[arg-type]
    )


def attach_calls(launches: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """For rows with launch_ns/launch_pid/launch_tid: the call that encloses the launch."""
    if calls.height == 0:
        return launches.with_columns(
            pl.lit(None, CPU_CALLS_SCHEMA[col]).alias(col) for col in CALL_FIELDS
        )
    left = (
        launches.lazy()
        .with_columns(
            _key=pl.col("launch_ns").fill_null(-1),
            _pid=pl.col("launch_pid").fill_null(-1),
            _tid=pl.col("launch_tid").fill_null(-1),
        )
        .sort("_key")
    )
    right = calls.lazy().rename({"pid": "_pid", "tid": "_tid"}).sort("call_start_ns")
    joined = left.join_asof(
        right,
        left_on="_key",
        right_on="call_start_ns",
        by=keyed(launches, "_pid", "_tid"),
        strategy="backward",
        check_sortedness=False,  # both sides are sorted by key; polars cannot verify per group
    )
    inside = pl.col("launch_ns") <= pl.col("call_end_ns")
    return collected(  # one query: a small rank's seven had cost more than their rows
        joined.with_columns(
            pl.when(inside).then(pl.col(c)).otherwise(None).alias(c) for c in CALL_FIELDS
        ).drop("_key", "_pid", "_tid"),
        launches.height,
    )
