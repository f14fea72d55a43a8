"""build_timeline(trace) -> Timeline: one rank's intervals, classified and placed in steps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec
import polars as pl

from traceview.errors import Note
from traceview.model.batch import Batch, batch_of, keyed, parts_of, per_part
from traceview.model.cpu import CPU_MODEL_COLUMNS, cpu_intervals
from traceview.model.facts import event_facts, interval_facts
from traceview.model.gpu import (
    DEVICE_CATS,
    gpu_intervals,
    has_gpu_activity,
    launches_of,
)
from traceview.model.gradients import GRADIENTS_SCHEMA, gradient_rows
from traceview.model.notes import timeline_notes
from traceview.model.steps import step_spans
from traceview.parse import Trace
from traceview.parse.args import LAUNCH_SCHEMA
from traceview.parse.names import (
    AUTOGRAD_OP,
    COMM_CALL,
    FSDP_BACKWARD_HOOK,
    FSDP_SPAN,
    GRADIENT_READY,
    PROFILER_STEP,
    WRAPPER_SPANS,
    named,
)
from traceview.queries import collected
from traceview.tables import INTERVALS_SCHEMA

Mode = Literal["gpu", "cpu"]


class Timeline(msgspec.Struct, frozen=True, kw_only=True):
    """One rank: its intervals (INTERVALS_SCHEMA) and the CPU spans of its profiler steps."""

    rank: int | None
    mode: Mode  # gpu: device kernels are the work; cpu: a CPU-only (Gloo) trace
    intervals: pl.DataFrame
    step_spans: pl.DataFrame  # step, span_start_ns, span_end_ns
    notes: tuple[Note, ...]
    # False for GPU work profiled without GPU activity: its communication cannot be seen.
    comm_measured: bool = True
    # The data-parallel wrappers whose record functions the trace holds (WRAPPER_SPANS' keys).
    wrappers: tuple[str, ...] = ()
    # Each gradient made ready, in order (model/gradients.py GRADIENTS_SCHEMA).
    gradients: pl.DataFrame = msgspec.field(
        default_factory=lambda: pl.DataFrame(schema=GRADIENTS_SCHEMA)
    )
    # The launch shape of each compute interval, in the intervals' order (LAUNCH_SCHEMA; null
    # where the trace does not record it), or no rows where none is read (a CPU trace): the
    # overlap tax compares launches of one kernel and shape (analysis/overlap_tax.py).
    launch_shapes: pl.DataFrame = msgspec.field(
        default_factory=lambda: pl.DataFrame(schema=LAUNCH_SCHEMA)
    )


def model_rows(trace: Trace) -> Trace:
    """The trace with only the events build_timeline reads. A GPU trace's model reads device
    work, the runtime calls that launched it, and the CPU spans that give it context (steps,
    the backward pass, FSDP modules, collective calls) — a third of its rows or less; the rest
    (CPU ops, other runtime calls) need not be held while it is built. A CPU-only trace's model
    reads its CPU spans, by thread and time alone: the columns that tie CPU to GPU work are let
    go, and the rows of other categories (Python functions) where they are many."""
    events = trace.events
    if not has_gpu_activity(trace):
        return msgspec.structs.replace(trace, events=_cpu_model_rows(events))
    device = pl.col("cat").is_in(DEVICE_CATS)
    spans = (PROFILER_STEP, AUTOGRAD_OP, FSDP_BACKWARD_HOOK, FSDP_SPAN, COMM_CALL, GRADIENT_READY)
    spans_read = (*spans, *WRAPPER_SPANS.values())
    context = named(events, "|".join(spans_read))
    launches = launches_of(events.filter(device))
    unread = pl.col("cat") == "accelerator"  # said in a note, not modelled
    return msgspec.structs.replace(
        trace, events=events.filter(device | launches | context | unread)
    )


def _cpu_model_rows(events: pl.DataFrame) -> pl.DataFrame:
    # Runtime calls say GPU work was launched unrecorded, accelerator events are noted, and the
    # wrappers' spans are looked for under any category.
    read = pl.col("cat").is_in(["cpu_op", "user_annotation", "runtime", "accelerator"]) | named(
        events, "|".join(WRAPPER_SPANS.values())
    )
    events = events.select(CPU_MODEL_COLUMNS)  # the others tie CPU work to GPU work
    unread = events.height - int(events.select(read.sum()).item())
    return events.filter(read) if unread > events.height // 8 else events  # a copy pays then


def build_timeline(trace: Trace, comm_pattern: str | None = None) -> Timeline:
    return build_timelines([trace], comm_pattern)[0]


def build_timelines(traces: Sequence[Trace], comm_pattern: str | None = None) -> list[Timeline]:
    """Each trace's Timeline; the traces of each mode whose events have the same columns are
    modelled together (model/batch.py), each exactly as it would be alone."""
    modes: list[Mode] = ["gpu" if has_gpu_activity(t) else "cpu" for t in traces]
    together: dict[tuple[object, ...], list[int]] = {}
    for i, (trace, mode) in enumerate(zip(traces, modes, strict=True)):
        together.setdefault((mode, *trace.events.schema.items()), []).append(i)
    out: dict[int, Timeline] = {}
    for members in together.values():
        batch = batch_of([traces[i] for i in members])
        made = _timelines(batch, modes[members[0]], comm_pattern)
        out.update(zip(members, made, strict=True))
    return [out[i] for i in range(len(traces))]


def _timelines(batch: Batch, mode: Mode, comm_pattern: str | None) -> list[Timeline]:
    spans = step_spans(batch.events)
    build = gpu_intervals if mode == "gpu" else cpu_intervals
    built = build(batch, spans, comm_pattern)
    ranks = [t.meta.rank for t in batch.traces]
    shaped = [c for c in LAUNCH_SCHEMA if c in built.columns]  # each kernel's launch shape
    ordered = collected(
        built.lazy()
        .with_columns(rank=per_part(ranks, pl.Int32()))
        .select(*keyed(built), *INTERVALS_SCHEMA, *shaped)
        .cast(INTERVALS_SCHEMA, strict=False),  # type: ignore[arg-type]  # out of range: unknown
        built.height,
    ).sort(keyed(built, "ts_ns"), maintain_order=True)  # ties in the order made
    intervals = ordered.drop(shaped)
    shapes = []
    if len(shaped) == len(LAUNCH_SCHEMA):  # lazily: only these columns of the compute rows
        compute = ordered.lazy().filter(pl.col("kind") == "compute")
        shapes.append(collected(compute.select(keyed(built, *shaped)), ordered.height))
    out = []
    n = len(batch.traces)
    events, found = event_facts(batch.events, n), interval_facts(intervals, n)
    gradients = parts_of(gradient_rows(batch.events, batch.comm_args, spans), n)
    launch_shapes = parts_of(shapes[0], n) if shapes else None
    for i, (trace, rows, steps, said, counted, grads) in enumerate(zip(
        batch.traces, parts_of(intervals, n), parts_of(spans, n), events, found, gradients,
        strict=True,
    )):  # fmt: skip
        comm_measured = mode == "gpu" or not said.launches_gpu_work
        out.append(
            Timeline(
                rank=trace.meta.rank,
                mode=mode,
                intervals=rows,
                step_spans=steps,
                notes=tuple(timeline_notes(trace, mode, steps, rows, comm_measured, said, counted)),
                comm_measured=comm_measured,
                wrappers=said.wrappers,
                gradients=grads,
                **({"launch_shapes": launch_shapes[i]} if launch_shapes is not None else {}),
            )
        )
    return out
