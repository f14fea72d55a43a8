"""Intervals of a trace with GPU activity: kernels, memcpy and memset on device streams."""

from __future__ import annotations

import polars as pl

from traceview.model import messages
from traceview.model.batch import PART, Batch, keyed
from traceview.model.calls import attach_calls, comm_call_ops, merge_nested
from traceview.model.distinct import per_distinct
from traceview.model.messages import trace_groups
from traceview.model.scopes import (
    context_spans,
    fsdp_module,
    innermost,
    own_collective_spans,
)
from traceview.model.steps import assign_steps
from traceview.parse import Trace
from traceview.parse.args import LAUNCH_SCHEMA
from traceview.parse.names import COMM_KERNEL, collective_of, named
from traceview.queries import collected
from traceview.tables import RECORDS_LANE, STREAM_LANE

MEMORY_CATS = ["memcpy", "memset"]
DEVICE_CATS = ["kernel", *MEMORY_CATS, "collective"]


def has_gpu_activity(trace: Trace) -> bool:
    return bool(trace.events.select(pl.col("cat").is_in(DEVICE_CATS).any()).item())


def launches_of(device: pl.DataFrame) -> pl.Expr:
    """True for the runtime calls that launched this device work (by correlation id): most
    runtime calls launch nothing the trace kept, and only these are looked up."""
    launched = device["correlation"].drop_nulls().unique()
    return (pl.col("cat") == "runtime") & pl.col("correlation").is_in(launched.implode())


def device_counts(rows: pl.DataFrame) -> tuple[int, int, int]:
    """(kernels, memcpy, memset) among intervals of device work."""
    memory = rows.filter(pl.col("kind") == "memory")["name"].cast(pl.String)
    memset = int(memory.str.contains("(?i)memset").sum())
    return rows.height - memory.len(), memory.len() - memset, memset


def said_counts(kernels: int, memcpy: int, memset: int) -> str:
    """ "12 kernels, 2 memcpy": each kind of device work counted, those there are."""
    counts = ((kernels, "kernels"), (memcpy, "memcpy"), (memset, "memset"))
    return ", ".join(f"{n:,} {what}" for n, what in counts if n)


def launches_recorded(device: pl.DataFrame) -> set[int]:
    """The parts (model/batch.py) whose device work is linked, some of it, to the runtime calls
    that launched it (a runtime's own record of a collective is launched by none)."""
    device = device.filter(pl.col("cat") != "collective")
    if PART not in device.columns:
        return {0} if device["launch_ns"].null_count() < device.height else set()
    recorded = device.group_by(PART).agg(pl.col("launch_ns").is_not_null().any())
    return set(recorded.filter(pl.col("launch_ns"))[PART].to_list())


def gpu_intervals(batch: Batch, spans: pl.DataFrame, comm_pattern: str | None) -> pl.DataFrame:
    events = batch.events
    device = events.filter(pl.col("cat").is_in(DEVICE_CATS))
    # Lazy, so that only the columns used are filtered: the events table is the largest thing
    # in memory. The runtime calls that launched this device work, by part and correlation id
    # (most launch nothing the trace kept); the first where an id repeats.
    by_id = keyed(events, "correlation")
    launched = device.lazy().select(by_id).drop_nulls().unique()
    launches = collected(
        events.lazy()
        .filter(pl.col("cat") == "runtime")
        .select(
            *by_id,
            launch_ns=pl.col("ts_ns"),
            launch_pid=pl.col("pid"),
            launch_tid=pl.col("tid"),
        )
        .join(launched, on=by_id, how="semi", maintain_order="left")
        .unique(by_id, keep="first", maintain_order=True),
        events.height,
    )
    device = _one_record_of_each_collective(
        device.join(launches, on=by_id, how="left").with_columns(
            device=pl.coalesce("device", "pid"),
            stream=pl.coalesce("stream", "tid"),
        )
    ).with_columns(
        # A runtime's record is on the host thread that made the call (tables.py device_lane).
        lane=pl.when(RUNTIME_RECORD)
        .then(pl.format(RECORDS_LANE + "{}", pl.col("tid")))
        .otherwise(pl.format(STREAM_LANE + "{}", pl.col("stream").cast(pl.String).fill_null("?")))
    )
    # What launched each: an op that runs its own collective? the backward pass (or, for
    # communication, one of FSDP's backward hooks)? for which FSDP module?
    context = context_spans(events)
    device = innermost(
        device,
        "launch_ns",
        "launch_pid",
        "launch_tid",
        {
            "_collective_op": own_collective_spans(events),
            "_backward": context.autograd,
            "_hook": context.gradient_comm,
            "_fsdp": context.fsdp,
        },
    )
    # A kernel is communication by its name (nccl*, rccl*), or by the op that launched it where
    # that op runs a collective in kernels of its own (symm_mem::multimem_all_reduce_).
    # A collective a runtime recorded as an event of its own is communication, whatever its name.
    is_comm = (
        named(device, COMM_KERNEL)
        | pl.col("_collective_op").is_not_null()
        | (pl.col("cat") == "collective")
    )
    if comm_pattern:
        is_comm = is_comm | named(device, comm_pattern)
    device = device.with_columns(
        kind=pl.when(pl.col("cat").is_in(MEMORY_CATS))
        .then(pl.lit("memory"))
        .when(is_comm)
        .then(pl.lit("comm"))
        .otherwise(pl.lit("compute"))
    )
    # A kernel belongs to the step whose CPU span holds the call that launched it. A kernel
    # whose launch is not in the trace was launched before the profiling window: no step.
    # (A trace that records no launch at all can only place kernels by their start.)
    recorded = launches_recorded(device)
    when = ["launch_ns" if part in recorded else "ts_ns" for part in range(len(batch.traces))]
    device = assign_steps(device, when, spans)
    communication = pl.col("kind") == "comm"
    device = device.with_columns(
        # Communication is backward work also where FSDP's backward hooks launched it.
        backward=pl.col("_backward").is_not_null()
        | (communication & pl.col("_hook").is_not_null()),
        module=pl.when(communication).then(fsdp_module(pl.col("_fsdp"))),
    )
    return _with_collectives(device, batch)


# A collective a runtime recorded as an event of its own (Kineto's collective_comm), and a
# collectives library's kernel: where a trace has both, they are the same collectives.
RUNTIME_RECORD = pl.col("cat") == "collective"


def library_kernel(frame: pl.DataFrame) -> pl.Expr:
    return (pl.col("cat") == "kernel") & named(frame, COMM_KERNEL)


def _one_record_of_each_collective(device: pl.DataFrame) -> pl.DataFrame:
    """The collectives a runtime records as events of their own (Kineto's collective_comm:
    XPU's oneCCL calls, on the host thread that made them), where a trace has no collectives
    library's kernels; where it has those too, they are the same collectives, read once, as
    the kernels. A runtime's record is launched by no runtime call: its launch is itself, on
    its own thread, so that its step is the one it ran in."""
    records = RUNTIME_RECORD
    if not device.select(records.any()).item():
        return device
    kernels = library_kernel(device)
    doubled = kernels.any().over(PART) if PART in device.columns else kernels.any()
    return device.filter(~(records & doubled)).with_columns(
        launch_ns=pl.when(records).then(pl.col("ts_ns")).otherwise(pl.col("launch_ns")),
        launch_pid=pl.when(records).then(pl.col("pid")).otherwise(pl.col("launch_pid")),
        launch_tid=pl.when(records).then(pl.col("tid")).otherwise(pl.col("launch_tid")),
    )


def _with_collectives(device: pl.DataFrame, batch: Batch) -> pl.DataFrame:
    """Collective, sizes, group and sequence of each comm kernel: from its own arguments
    (newer traces), else from the CPU call that launched it, else from the kernel's name."""
    calls = merge_nested(comm_call_ops(batch.events, batch.comm_args))
    comm = device.filter(pl.col("kind") == "comm")
    comm = attach_calls(comm, calls).join(batch.comm_args, on=keyed(comm, "row"), how="left")
    comm = per_distinct(comm, _KERNEL_INPUTS, _kernel_fields, _KERNEL_FIELDS).with_columns(
        collective=pl.coalesce("call_collective", "_folded", "_by_kernel"),
        in_bytes=pl.coalesce("_in_bytes", "call_in_bytes"),
        out_bytes=pl.coalesce("_out_bytes", "call_out_bytes"),
        elem_bytes=pl.coalesce("_elem_bytes", "call_elem_bytes"),
        arg_group_size=pl.coalesce("group_size", "call_group_size"),
        pg=pl.coalesce("pg_name", "call_pg"),
        pg_desc=pl.coalesce("pg_desc", "call_pg_desc"),
        seq=pl.coalesce("seq", "call_seq"),
    )
    comm = messages.with_sizes(
        comm.drop("group_size", *_KERNEL_FIELDS),
        [trace_groups(t) for t in batch.traces],
        [t.meta.world_size for t in batch.traces],
    )
    rest = (
        device.lazy()
        .filter(pl.col("kind") != "comm")
        .with_columns(
            collective=pl.lit(None, pl.String),
            bytes=pl.lit(None, pl.Int64),
            elements=pl.lit(None, pl.Int64),
            group_size=pl.lit(None, pl.Int64),
            pg=pl.lit(None, pl.String),
            seq=pl.lit(None, pl.Int64),
        )
    )
    keep = [
        *keyed(device),
        "module",
        "backward",
        "device",
        "lane",
        *LAUNCH_SCHEMA,
        "kind",
        "name",
        "ts_ns",
        "end_ns",
        "launch_ns",
        "step",
        "collective",
        "bytes",
        "elements",
        "group_size",
        "pg",
        "seq",
    ]
    return collected(  # one query: a small rank's six had cost more than their rows
        pl.concat([comm.lazy().select(keep), rest.select(keep)]).with_columns(
            lane_kind=pl.lit("gpu_stream")
        ),
        device.height,
    )


# A comm kernel's own arguments and name, and what is read from them: the collective from the
# recorded collective_name, else from the kernel's name; the bytes from the element counts.
_KERNEL_INPUTS = ("collective_name", "name", "in_nelems", "out_nelems", "dtype")
_KERNEL_FIELDS: dict[str, pl.DataType] = {
    "_folded": pl.String(),
    "_by_kernel": pl.String(),
    "_in_bytes": pl.Int64(),
    "_out_bytes": pl.Int64(),
    "_elem_bytes": pl.Int64(),
}


def _kernel_fields(
    collective_name: str | None,
    name: str | None,
    in_nelems: int | None,
    out_nelems: int | None,
    dtype: str | None,
) -> tuple[object, ...]:
    return (
        collective_of(collective_name),
        collective_of(name),
        *messages.from_counts(in_nelems, out_nelems, dtype),
        messages.dtype_bytes(dtype),
    )
