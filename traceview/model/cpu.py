"""Intervals of a CPU-only trace: Gloo collectives on their runloop threads, and the top-level
CPU ops of the training threads as compute, with the time they spend waiting cut out."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from traceview.algebra import apart, each_minus, union
from traceview.model import messages
from traceview.model.batch import Batch, keyed, part_numbers, with_part_type, within_part
from traceview.model.calls import comm_call_ops, merge_nested
from traceview.model.distinct import per_distinct
from traceview.model.messages import trace_groups
from traceview.model.scopes import context_spans, fsdp_module, innermost
from traceview.model.steps import assign_steps
from traceview.parse.names import (
    COMM_CALL,
    GLOO_SPAN,
    GLOO_THREAD,
    WAIT_OP,
    collective_of,
    named,
)
from traceview.queries import collected

_NO_COLLECTIVE = {
    "collective": pl.lit(None, pl.String),
    "bytes": pl.lit(None, pl.Int64),
    "elements": pl.lit(None, pl.Int64),
    "group_size": pl.lit(None, pl.Int64),
    "pg": pl.lit(None, pl.String),
    "seq": pl.lit(None, pl.Int64),
}


# What the CPU-only model reads of each event: its thread and time (model_rows keeps only these).
CPU_MODEL_COLUMNS = ("row", "ts_ns", "end_ns", "name", "cat", "pid", "tid")


def cpu_intervals(batch: Batch, spans: pl.DataFrame, comm_pattern: str | None) -> pl.DataFrame:
    # The events are millions of rows: each kind of row is taken from them by one filter, never
    # by copying them whole (the training threads' rows are a mask, not a table).
    events = batch.events
    cpu = pl.col("cat").is_in(["cpu_op", "user_annotation"])
    gloo = cpu & named(events, GLOO_SPAN)
    # Spans the user names as communication are that, wherever they run; their thread stays
    # a training thread whose other work is compute.
    custom = (cpu & named(events, comm_pattern) & ~gloo) if comm_pattern else pl.lit(False)
    is_comm = gloo | custom
    columns = list(CPU_MODEL_COLUMNS)
    gloo_rows, custom_rows = _rows(events, gloo, columns), _rows(events, custom, columns)
    # Made once, a bit per event: a batch's Gloo threads are tens, each a test of every event,
    # and the training threads are chosen three times below.
    on_comm_threads = events.select(_on_threads(_comm_threads(batch, gloo_rows))).to_series()
    training = cpu & ~pl.lit(on_comm_threads)
    waiting = named(events, WAIT_OP) | named(events, COMM_CALL)
    compute = _top_level_minus(
        events,
        training & (pl.col("cat") == "cpu_op") & ~is_comm & ~waiting,
        _rows(events, training & (waiting | is_comm), ["pid", "tid", "ts_ns", "end_ns"]),
    )
    # Spans on Gloo's threads never contain a training thread's work: the scopes below are
    # read from every thread, as innermost() matches them thread by thread.
    training_calls = _rows(events, training & named(events, COMM_CALL), columns)
    context = context_spans(events)
    calls = innermost(
        _call_rows(training_calls, batch),
        "ts_ns",
        "pid",
        "tid",
        {"_backward": context.gradient_comm, "_fsdp": context.fsdp},
    ).with_columns(backward=pl.col("_backward").is_not_null(), module=fsdp_module(pl.col("_fsdp")))
    compute = innermost(
        compute, "ts_ns", "pid", "tid", {"_backward": context.autograd}
    ).with_columns(backward=pl.col("_backward").is_not_null(), module=pl.lit(None, pl.String))
    groups = [trace_groups(t) for t in batch.traces]
    world = [t.meta.world_size for t in batch.traces]
    comm = pl.concat(
        [
            _with_launching_calls(_comm_rows(gloo_rows, batch), calls),
            _unpaired(_comm_rows(custom_rows, batch)),
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
        *keyed(events),
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
    thread called them (one work queue). Pair a trace's k-th span with its k-th c10d call: the
    call names the logical collective (a reduce-scatter runs as gloo:all_reduce), its tensors
    give the message (a span records only its input), and its start is when the collective was
    ready. A trace's pairs are kept only if it has as many calls as spans and every span's
    input fits its call's tensors."""
    calls = calls.filter(pl.col("collective").is_not_null())
    calls = calls.sort(keyed(calls, "ts_ns"), maintain_order=True)
    comm = comm.sort(keyed(comm, "ts_ns"), maintain_order=True)
    index = _kth_call(part_numbers(comm), part_numbers(calls), comm.height, calls.height)
    if index is None:
        return _unpaired(comm)
    theirs = calls.select(
        pl.col("ts_ns", "module", "backward", *messages.MESSAGE_COLUMNS)
        .gather(index)
        .name.prefix("_call_")
    ).with_columns(_call_has=index.is_not_null())
    span = pl.col("in_bytes")

    def holds(side: str) -> pl.Expr:  # a whole number of the span's inputs
        return (pl.col(side) >= span) & (pl.col(side) % span == 0)

    fits = pl.col("_call_has") & (
        span.is_null()
        | (pl.col("_call_in_bytes").is_null() & pl.col("_call_out_bytes").is_null())
        | holds("_call_in_bytes").fill_null(False)
        | holds("_call_out_bytes").fill_null(False)
    )
    paired = within_part(fits.all(), comm)
    return (
        comm.hstack(theirs.get_columns())
        .with_columns(
            launch_ns=pl.when(paired).then(pl.col("_call_ts_ns")),
            module=pl.when(paired).then(pl.col("_call_module")),
            backward=pl.when(paired).then(pl.col("_call_backward")).otherwise(pl.lit(False)),
            **{
                c: pl.when(paired).then(pl.coalesce(f"_call_{c}", c)).otherwise(pl.col(c))
                for c in messages.MESSAGE_COLUMNS
            },
        )
        .drop(theirs.columns)
    )


def _kth_call(
    span_parts: np.ndarray | None, call_parts: np.ndarray | None, spans: int, calls: int
) -> pl.Series | None:
    """For each span (sorted by part and start), the row of its trace's call of the same rank
    (sorted likewise), where its trace has as many calls as spans; else null. None where no
    span has one."""
    if span_parts is None or call_parts is None:  # one trace
        return pl.Series(np.arange(spans), dtype=pl.UInt32) if spans == calls and spans else None
    index = np.full(spans, -1, dtype=np.int64)
    parts, firsts, counts = np.unique(span_parts, return_index=True, return_counts=True)
    call_firsts = dict(zip(*np.unique(call_parts, return_index=True), strict=True))
    call_counts = dict(zip(*np.unique(call_parts, return_counts=True), strict=True))
    for part, first, count in zip(parts, firsts, counts, strict=True):
        if call_counts.get(part) == count:
            index[first : first + count] = call_firsts[part] + np.arange(count)
    if (index < 0).all():
        return None
    found = pl.Series(index, dtype=pl.Int64)
    return found.set(found < 0, None).cast(pl.UInt32)


def _unpaired(comm: pl.DataFrame) -> pl.DataFrame:
    return comm.with_columns(
        launch_ns=pl.lit(None, pl.Int64),
        module=pl.lit(None, pl.String),
        backward=pl.lit(False),
    )


def _comm_threads(batch: Batch, gloo: pl.DataFrame) -> pl.DataFrame:
    """Gloo's runloop threads ((part,) pid, tid): the threads of its spans, and the threads
    named after it."""
    threads = keyed(gloo, "pid", "tid")
    named = [
        (part, pid, tid)[3 - len(threads) :]
        for part, trace in enumerate(batch.traces)
        for (pid, tid), names in trace.thread_names.items()
        if any(GLOO_THREAD in n for n in names)
    ]
    schema = with_part_type({"pid": pl.Int64(), "tid": pl.Int64()}, gloo)
    return collected(
        pl.concat(
            [
                gloo.lazy().select(threads),
                pl.LazyFrame(named, schema=schema, orient="row"),
            ]
        ).unique(),  # lazily: an eager unique of a million rows holds several times their size
        gloo.height,
    )


def _rows(events: pl.DataFrame, which: pl.Expr, columns: list[str]) -> pl.DataFrame:
    """The rows chosen, with (their part and) only these columns copied."""
    return collected(events.lazy().filter(which).select(*keyed(events), *columns), events.height)


def _on_threads(threads: pl.DataFrame) -> pl.Expr:
    """True for the rows on these threads (a few: Gloo's runloops), each key as `threads` holds
    it ((part,) pid, tid)."""
    return pl.any_horizontal(
        pl.lit(False), *(_on(threads.columns, row) for row in threads.iter_rows())
    )


def _comm_rows(comm: pl.DataFrame, batch: Batch) -> pl.DataFrame:
    rows = comm.join(batch.comm_args, on=keyed(comm, "row"), how="left")
    return (
        per_distinct(rows, _SPAN_INPUTS, _span_fields, _SPAN_FIELDS)
        .with_columns(
            kind=pl.lit("comm"), arg_group_size=pl.col("group_size"), pg=pl.col("pg_name")
        )
        .drop("group_size", "collective_name", *messages.SIZE_ARGS)  # read: let them go
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


def _call_rows(ops: pl.DataFrame, batch: Batch) -> pl.DataFrame:
    """Collective launches on the training threads (`ops`: theirs), as `other` rows."""
    calls = merge_nested(comm_call_ops(ops, batch.comm_args))
    return calls.select(
        *keyed(calls, "pid", "tid"),
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


def _top_level_minus(events: pl.DataFrame, ops: pl.Expr, cuts: pl.DataFrame) -> pl.DataFrame:
    """The top-level `ops` of each thread, with the time of any cut (a wait or collective call
    on the same thread) removed; a cut op is split. Every thread at once: each thread's times
    are moved into a stretch of their own (`apart`), so that one union of the cuts and one cut
    of the ops give each thread what it alone would."""
    top = _top_level(events, ops)
    if cuts.height == 0 or top.height == 0:
        return top
    threads = keyed(cuts, "pid", "tid")
    # A thread's number: 0 for those without cuts, then the others as the cuts first name them.
    numbered = cuts.select(threads).unique(maintain_order=True).with_row_index("_n", offset=1)
    top_n = _thread_numbers(top, numbered, threads)
    cut_n = _thread_numbers(cuts, numbered, threads)
    starts, ends = top["ts_ns"].to_numpy(), top["end_ns"].to_numpy()
    shift = apart(numbered.height + 1, (top_n, starts, ends), (cut_n, cuts["ts_ns"].to_numpy(),
                                                            cuts["end_ns"].to_numpy()))  # fmt: skip
    order = np.argsort(top_n, kind="stable")  # threads without cuts first, as before them
    moved = shift[top_n[order]]
    cut = union(cuts["ts_ns"].to_numpy() + shift[cut_n], cuts["end_ns"].to_numpy() + shift[cut_n])
    owner, lo, hi = each_minus(starts[order] + moved, ends[order] + moved, cut)
    back = moved[owner]
    return top[order[owner]].with_columns(
        ts_ns=pl.Series(lo - back, dtype=pl.Int64), end_ns=pl.Series(hi - back, dtype=pl.Int64)
    )


def _thread_numbers(rows: pl.DataFrame, numbered: pl.DataFrame, threads: list[str]) -> np.ndarray:
    """Each row's thread's number in `numbered` (0 where it has none)."""
    found = rows.select(threads).join(numbered, on=threads, how="left", maintain_order="left")
    return found["_n"].fill_null(0).to_numpy().astype(np.int64)


def _top_level(events: pl.DataFrame, ops: pl.Expr) -> pl.DataFrame:
    """The events chosen by `ops` that no earlier one on their thread reaches past (ops nested
    in another are covered by it), per thread in time order: (part,) pid, tid, name, ts_ns,
    end_ns. Found from index arrays, every thread at once (each thread's times moved into a
    stretch of their own, `apart`): the ops are millions of rows, and a table of them, sorted,
    costs several times their size."""
    # A bit per event, made once (with_columns: a literal is one per event too).
    chosen = events.with_columns(_chosen=ops.fill_null(False))["_chosen"]
    columns = keyed(events, "pid", "tid", "name", "ts_ns", "end_ns")
    rows = chosen.arg_true()
    if rows.len() == 0:
        return events.select(columns).clear()
    starts = events["ts_ns"].gather(rows).to_numpy()
    ends = events["end_ns"].gather(rows).to_numpy()
    thread = _threads_of(events, chosen)
    if thread is not None:
        shift = apart(int(thread.max()) + 1, (thread, starts, ends))[thread]
        starts, ends = starts + shift, ends + shift
        del shift
    order = _by_start_longest_first(starts, ends)
    if order is not None:
        rows, ends = rows.gather(order), ends[order]
    del starts, order
    reach = np.maximum.accumulate(ends)
    first = np.empty(ends.size, dtype=bool)
    first[0] = True
    first[1:] = ends[1:] > reach[:-1]
    return events.select(columns)[rows.filter(first)]


def _threads_of(events: pl.DataFrame, chosen: pl.Series) -> np.ndarray | None:
    """The thread of each chosen event, numbered in the order of their keys ((part,) pid, tid);
    None where they are all on one."""
    keys = keyed(events, "pid", "tid")
    mine = events.lazy().select(keys).filter(chosen)
    threads = collected(mine.unique().sort(keys).with_row_index("_n"), events.height)
    if threads.height == 1:
        return None
    numbered = collected(
        mine.join(threads.lazy(), on=keys, how="left", maintain_order="left"), events.height
    )
    return numbered["_n"].to_numpy().astype(np.int64)


def _on(keys: list[str], values: tuple[object, ...]) -> pl.Expr:
    """True for the rows of one thread: each of its keys ((part,) pid, tid) as given."""
    return pl.all_horizontal(pl.col(k) == v for k, v in zip(keys, values, strict=True))


def _by_start_longest_first(starts: np.ndarray, ends: np.ndarray) -> np.ndarray | None:
    """The order by start, the longest first among equal starts; None where that is the order
    they are in (a profiler writes a thread's ops by start, so most traces' are)."""
    same = starts[1:] == starts[:-1]
    if ((starts[1:] > starts[:-1]) | (same & (ends[1:] <= ends[:-1]))).all():
        return None
    return np.lexsort((-ends, starts))
