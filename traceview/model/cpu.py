"""Intervals of a CPU-only trace: Gloo collectives on their runloop threads, and the top-level
CPU ops of the training threads as compute, with the time they spend waiting cut out."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from traceview.algebra import IntervalSet, difference, union
from traceview.model import messages
from traceview.model.calls import comm_call_ops, merge_nested
from traceview.model.distinct import per_distinct
from traceview.model.messages import trace_groups
from traceview.model.scopes import (
    autograd_spans,
    fsdp_module,
    fsdp_spans,
    gradient_comm_spans,
    innermost,
)
from traceview.model.steps import assign_steps
from traceview.parse import Trace
from traceview.parse.names import (
    COMM_CALL,
    GLOO_SPAN,
    GLOO_THREAD,
    WAIT_OP,
    collective_of,
    named,
)

_NO_COLLECTIVE = {
    "collective": pl.lit(None, pl.String),
    "bytes": pl.lit(None, pl.Int64),
    "elements": pl.lit(None, pl.Int64),
    "group_size": pl.lit(None, pl.Int64),
    "pg": pl.lit(None, pl.String),
    "seq": pl.lit(None, pl.Int64),
}


def cpu_intervals(trace: Trace, spans: pl.DataFrame, comm_pattern: str | None) -> pl.DataFrame:
    events = (
        trace.events.lazy()
        .filter(pl.col("cat").is_in(["cpu_op", "user_annotation"]))
        .select("row", "pid", "tid", "name", "cat", "ts_ns", "end_ns")
        .collect()
    )
    gloo = named(events, GLOO_SPAN)
    # Spans the user names as communication are that, wherever they run; their thread stays
    # a training thread whose other work is compute.
    custom = (named(events, comm_pattern) & ~gloo) if comm_pattern else pl.lit(False)
    is_comm = gloo | custom
    gloo_rows, custom_rows = events.filter(gloo), events.filter(custom)
    comm_threads = _comm_threads(trace, gloo_rows)
    training = (
        events.join(comm_threads, on=["pid", "tid"], how="anti") if comm_threads.height else events
    )
    del events  # (each copy of millions of events counts: tiny-event traces)
    waiting = named(training, WAIT_OP) | named(training, COMM_CALL)
    ops = training.filter((pl.col("cat") == "cpu_op") & ~is_comm & ~waiting)
    compute = _top_level_minus(ops, training.filter(waiting | is_comm))
    del ops
    gradient_comm = gradient_comm_spans(training)
    calls = innermost(
        _call_rows(training, trace), "ts_ns", "pid", "tid", gradient_comm, "_backward"
    )
    calls = innermost(calls, "ts_ns", "pid", "tid", fsdp_spans(training), "_fsdp")
    calls = calls.with_columns(
        backward=pl.col("_backward").is_not_null(), module=fsdp_module(pl.col("_fsdp"))
    )
    autograd = autograd_spans(training)
    compute = innermost(compute, "ts_ns", "pid", "tid", autograd, "_backward").with_columns(
        backward=pl.col("_backward").is_not_null(), module=pl.lit(None, pl.String)
    )
    groups, world = trace_groups(trace), trace.meta.world_size
    comm = pl.concat(
        [
            _with_launching_calls(_comm_rows(gloo_rows, trace), calls),
            _unpaired(_comm_rows(custom_rows, trace)),
        ]
    )
    frames = [
        messages.with_sizes(comm, groups, world),
        compute.with_columns(
            kind=pl.lit("compute"), launch_ns=pl.lit(None, pl.Int64), **_NO_COLLECTIVE
        ),
        messages.with_sizes(calls, groups, world).with_columns(launch_ns=pl.lit(None, pl.Int64)),
    ]
    keep = [
        "pid",
        "tid",
        "kind",
        "name",
        "ts_ns",
        "end_ns",
        "launch_ns",
        "collective",
        "bytes",
        "elements",
        "group_size",
        "pg",
        "seq",
        "module",
        "backward",
    ]
    out = pl.concat([f.select(keep) for f in frames])
    return (
        assign_steps(out, "ts_ns", spans)
        .with_columns(
            device=pl.lit(None, pl.Int32),
            lane=pl.format("thread {}", pl.col("tid").cast(pl.String).fill_null("?")),
            lane_kind=pl.lit("cpu_thread"),
        )
        .drop("pid", "tid")
    )


def _with_launching_calls(comm: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """Gloo runs each collective as a span on a runloop thread, in the order the training
    thread called them (one work queue). Pair the k-th span with the k-th c10d call: the call
    names the logical collective (a reduce-scatter runs as gloo:all_reduce), its tensors give
    the message (a span records only its input), and its start is when the collective was
    ready. Pairs are kept only if every span's input fits its call's tensors."""
    calls = calls.filter(pl.col("collective").is_not_null()).sort("ts_ns")
    comm = comm.sort("ts_ns")
    unpaired = _unpaired(comm)
    if calls.height != comm.height or comm.height == 0:
        return unpaired
    fits = all(
        span is None
        or (call_in is None and call_out is None)
        or any(b is not None and b >= span and b % span == 0 for b in (call_in, call_out))
        for span, call_in, call_out in zip(
            comm["in_bytes"], calls["in_bytes"], calls["out_bytes"], strict=True
        )
    )
    if not fits:
        return unpaired
    paired = {c: pl.coalesce(calls[c], pl.col(c)) for c in messages.MESSAGE_COLUMNS}
    return comm.with_columns(
        launch_ns=calls["ts_ns"],
        module=calls["module"],
        backward=calls["backward"],
        **paired,
    )


def _unpaired(comm: pl.DataFrame) -> pl.DataFrame:
    return comm.with_columns(
        launch_ns=pl.lit(None, pl.Int64),
        module=pl.lit(None, pl.String),
        backward=pl.lit(False),
    )


def _comm_threads(trace: Trace, gloo: pl.DataFrame) -> pl.DataFrame:
    """Gloo's runloop threads: the threads of its spans, and the threads named after it."""
    named = [k for k, names in trace.thread_names.items() if any(GLOO_THREAD in n for n in names)]
    return pl.concat(
        [
            gloo.select("pid", "tid"),
            pl.DataFrame(named, schema={"pid": pl.Int64, "tid": pl.Int64}, orient="row"),
        ]
    ).unique()


def _comm_rows(comm: pl.DataFrame, trace: Trace) -> pl.DataFrame:
    rows = comm.join(trace.comm_args, on="row", how="left")
    return (
        per_distinct(rows, _SPAN_INPUTS, _span_fields, _SPAN_FIELDS)
        .with_columns(
            kind=pl.lit("comm"), arg_group_size=pl.col("group_size"), pg=pl.col("pg_name")
        )
        .drop("group_size")
    )


# A Gloo span's name and arguments, and what is read from them: its collective, and its
# input and output bytes (messages.recorded_sizes).
_SPAN_INPUTS = ("name", *messages.SIZE_ARGS)
_SPAN_FIELDS: dict[str, pl.DataType] = {
    "collective": pl.String(),
    "in_bytes": pl.Int64(),
    "out_bytes": pl.Int64(),
    "elem_bytes": pl.Int64(),
}


def _span_fields(name: str, *size_args: Any) -> tuple[object, ...]:
    *sides, elem = messages.recorded_sizes(str(name), *size_args)
    return (collective_of(name), *(size for size, _counted in sides), elem)


def _call_rows(training: pl.DataFrame, trace: Trace) -> pl.DataFrame:
    """Collective launches on the training threads, as `other` rows."""
    calls = merge_nested(comm_call_ops(training, trace.comm_args))
    return calls.select(
        "pid",
        "tid",
        kind=pl.lit("other"),
        name=pl.lit("collective call", pl.Categorical),
        ts_ns=pl.col("call_start_ns"),
        end_ns=pl.col("call_end_ns"),
        collective=pl.col("call_collective"),
        in_bytes=pl.col("call_in_bytes"),
        out_bytes=pl.col("call_out_bytes"),
        elem_bytes=pl.col("call_elem_bytes"),
        arg_group_size=pl.col("call_group_size"),
        pg=pl.col("call_pg"),
        pg_desc=pl.col("call_pg_desc"),
        seq=pl.col("call_seq"),
    )


def _top_level_minus(ops: pl.DataFrame, cuts: pl.DataFrame) -> pl.DataFrame:
    """Top-level ops per thread (ops nested in another are covered by it), with the time of
    any cut (a wait or collective call on the same thread) removed; a cut op is split."""
    ops = ops.sort("pid", "tid", "ts_ns", -pl.col("end_ns"))
    reach = pl.col("end_ns").cum_max().shift(1).over("pid", "tid")
    top = ops.filter(reach.is_null() | (pl.col("end_ns") > reach)).select(
        "pid", "tid", "name", "ts_ns", "end_ns"
    )
    if cuts.height == 0 or top.height == 0:
        return top
    pieces = []
    for (pid, tid), thread_cuts in cuts.group_by("pid", "tid"):
        cut = union(thread_cuts["ts_ns"].to_numpy(), thread_cuts["end_ns"].to_numpy())
        mine = top.filter((pl.col("pid") == pid) & (pl.col("tid") == tid))
        s, e = mine["ts_ns"].to_numpy(), mine["end_ns"].to_numpy()
        # The first cut ending after each op starts hits the op if it starts before the op ends.
        j = np.searchsorted(cut.ends, s, side="right")
        hit = np.zeros(s.size, dtype=bool)
        inside = j < len(cut)
        hit[inside] = cut.starts[j[inside]] < e[inside]
        for i in np.flatnonzero(hit):
            rest = difference(IntervalSet(s[i : i + 1], e[i : i + 1]), cut)
            pieces.append(
                pl.DataFrame(
                    {"ts_ns": rest.starts, "end_ns": rest.ends},
                ).with_columns(
                    pid=pl.lit(pid, pl.Int64),
                    tid=pl.lit(tid, pl.Int64),
                    name=pl.lit(mine["name"][int(i)], pl.Categorical),
                )
            )
        pieces.append(mine.filter(pl.Series(~hit)))
    untouched = top.join(cuts.select("pid", "tid").unique(), on=["pid", "tid"], how="anti")
    return pl.concat([untouched, *(p.select(top.columns) for p in pieces)])
