"""build_timeline(trace) -> Timeline: one rank's intervals, classified and placed in steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import polars as pl

from traceview.errors import Note
from traceview.model.cpu import cpu_intervals
from traceview.model.gpu import gpu_intervals, has_gpu_activity
from traceview.model.schema import INTERVALS_SCHEMA
from traceview.model.steps import step_spans
from traceview.parse import Trace

Mode = Literal["gpu", "cpu"]


@dataclass(frozen=True, kw_only=True)
class Timeline:
    """One rank: its intervals (INTERVALS_SCHEMA) and the CPU spans of its profiler steps."""

    rank: int | None
    mode: Mode  # gpu: device kernels are the work; cpu: a CPU-only (Gloo) trace
    intervals: pl.DataFrame
    step_spans: pl.DataFrame  # step, span_start_ns, span_end_ns
    notes: tuple[Note, ...]


def build_timeline(trace: Trace, comm_pattern: str | None = None) -> Timeline:
    spans = step_spans(trace.events)
    mode: Mode = "gpu" if has_gpu_activity(trace) else "cpu"
    build = gpu_intervals if mode == "gpu" else cpu_intervals
    intervals = (
        build(trace, spans, comm_pattern)
        .with_columns(rank=pl.lit(trace.meta.rank, pl.Int32))
        .select(list(INTERVALS_SCHEMA))
        .cast(INTERVALS_SCHEMA)  # type: ignore[arg-type]
        .sort("ts_ns")
    )
    notes = [*_notes(trace, mode, spans, intervals)]
    return Timeline(
        rank=trace.meta.rank, mode=mode, intervals=intervals, step_spans=spans, notes=tuple(notes)
    )


def _notes(trace: Trace, mode: Mode, spans: pl.DataFrame, intervals: pl.DataFrame):
    if spans.height == 0:
        yield Note(message="no ProfilerStep spans: only whole-trace totals are reported")
    work = intervals.filter(pl.col("kind") != "other")
    if mode == "gpu" and work.height and work["launch_ns"].null_count() == work.height:
        yield Note(
            message="no kernel's launch is recorded (no runtime events with correlation ids): "
            "kernels are placed in steps by their start time"
        )
    elif mode == "gpu" and spans.height:
        before = work.filter(pl.col("launch_ns").is_null())
        if before.height:
            yield Note(
                message=f"{before.height:,} kernels were launched before the profiling window "
                "(their launch is not in the trace): reported as 'before the first step', "
                "counted in the totals, in no step"
            )
        work = work.filter(pl.col("launch_ns").is_not_null())
    outside = work.filter(pl.col("step").is_null()).height
    if spans.height and outside:
        where = "were launched" if mode == "gpu" else "start"
        yield Note(
            message=f"{outside:,} intervals {where} outside every profiler step: "
            "they count in the totals only"
        )
    if mode == "cpu":
        launched = trace.events.filter(
            pl.col("name").cast(pl.String).str.contains(r"^(?:nccl|rccl):")
        ).height
        if launched and work.filter(pl.col("kind") == "comm").height == 0:
            yield Note(
                message="the trace launches NCCL collectives but holds no GPU activity "
                "(profiled without CUDA activities?): communication cannot be measured"
            )
