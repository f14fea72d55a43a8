"""What the reader of a rank's timeline must know: steps that could not be told apart, work
outside every step, and communication that is missing or cannot be measured."""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from traceview.errors import Note
from traceview.model.facts import EventFacts, IntervalFacts
from traceview.model.gpu import said_counts
from traceview.parse import Trace
from traceview.parse.names import MAYBE_COMM_KERNEL
from traceview.plain import counted, noun

SUGGESTED_KERNELS = 3


def timeline_notes(
    trace: Trace,
    mode: str,
    spans: pl.DataFrame,
    intervals: pl.DataFrame,
    comm_measured: bool,
    events: EventFacts,
    found: IntervalFacts,
) -> Iterator[Note]:
    """The notes of one trace's timeline, from what was counted of it (model/facts.py)."""
    if events.unnumbered_steps:
        yield Note(
            message=f"{events.unnumbered_steps:,} ProfilerStep spans have numbers too long to "
            "read: skipped",
            severity="lossy",
        )
    if spans.height == 0:
        yield Note(
            message="no ProfilerStep spans: only whole-trace totals are reported (call "
            "prof.step() once per training iteration for per-step figures)"
        )
    outside = found.outside
    if mode == "gpu" and found.work and sum(found.unlaunched) == found.work:
        yield Note(
            message="no kernel's launch is recorded (no runtime events with correlation ids): "
            "kernels are placed in steps by their start time",
            severity="caveat",
        )
    elif mode == "gpu" and spans.height:
        if sum(found.unlaunched):
            yield Note(
                message=f"{said_counts(*found.unlaunched)} were launched before the "
                "profiling window (their launch is not in the trace): reported as 'before the "
                "first step', counted in the totals, in no step"
            )
        outside = found.launched_outside
    if mode == "gpu" and spans.height and found.work:
        yield from _steps_without_device_work(spans, intervals)
    if spans.height and outside:
        where = "were launched" if mode == "gpu" else "start"
        yield Note(
            message=f"{outside:,} intervals {where} outside every profiler step: "
            "they count in the totals only"
        )
    if events.accelerator_events:
        yield _accelerator_work(trace)
    if events.runtime_records:
        yield Note(
            message=f"{counted(events.runtime_records, 'collective')} timed by a runtime's own "
            "record (Kineto's collective_comm: XPU's oneCCL), not by a device kernel: "
            "communication, overlap and exposed communication are as that runtime timed the calls",
            severity="caveat",
        )
    if not comm_measured:
        yield Note(
            message="the trace launches GPU work but holds no GPU activity (profiled without "
            "CUDA activities?): communication cannot be measured, so comm, overlap, exposed "
            "communication and idle are unknown; compute is the CPU ops' time",
            severity="caveat",
        )
    elif (trace.meta.world_size or 0) > 1 and not found.has_comm:
        yield _no_communication(trace.meta.world_size, mode, intervals)


def _no_communication(world_size: int | None, mode: str, intervals: pl.DataFrame) -> Note:
    """A rank of a multi-rank job with no communication found: say so, and offer the kernels
    most likely to be the communication a custom library runs."""
    message = (
        f"world size {world_size} but no communication was found: communication figures are 0 "
        "and overlap is undefined; if the job's collectives run in kernels or spans not named "
        "nccl*/rccl*/gloo:*, name them with --comm-pattern REGEX"
    )
    if mode == "gpu":
        kernels = (
            intervals.filter(pl.col("kind") == "compute")
            .group_by(name=pl.col("name").cast(pl.String))
            .agg(ms=(pl.col("end_ns") - pl.col("ts_ns")).sum() / 1e6)
            .sort("ms", descending=True)
        )
        likely = kernels.filter(pl.col("name").str.contains(MAYBE_COMM_KERNEL))
        shown = (likely if likely.height else kernels).head(SUGGESTED_KERNELS)
        if shown.height:
            what = "kernels that could be communication" if likely.height else "kernels"
            names = ", ".join(f"{_short(n)} ({ms:,.3f} ms)" for n, ms in shown.iter_rows())
            message += f" (longest-running {what}: {names})"
    return Note(message=message, severity="caveat")


# Names a collective library's device events carry (NCCL, RCCL, HCCL, ...) or collectives'.
_COLLECTIVE_LIKE = rf"(?i)ccl|{MAYBE_COMM_KERNEL.removeprefix('(?i)')}"


def _accelerator_work(trace: Trace) -> Note:
    """Device work of an accelerator the model does not read (kernels in a category of their
    own, such as "npu_kernel"): named, with how much of it looks like communication, never left
    out in silence."""
    work = trace.events.filter(pl.col("cat") == "accelerator")
    names = work.group_by(name=pl.col("name").cast(pl.String)).len().sort("len", descending=True)
    collectives = names.filter(pl.col("name").str.contains(_COLLECTIVE_LIKE))
    said = ", ".join(f"{_short(n)} ×{c:,}" for n, c in collectives.head(SUGGESTED_KERNELS).rows())
    comm = (
        f"; {int(collectives['len'].sum()):,} of them are named like collectives ({said})"
        if collectives.height
        else ""
    )
    return Note(
        message=f"{work.height:,} device events of an accelerator traceview does not model "
        f"(kernels in a category of their own, not Kineto's 'kernel') were left out{comm}: no "
        "figure here includes that device's compute or communication",
        severity="caveat",
    )


def _short(name: str, limit: int = 60) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


STEPS_LISTED = 5  # step numbers a note lists before it counts the rest


def _steps_without_device_work(spans: pl.DataFrame, intervals: pl.DataFrame) -> Iterator[Note]:
    """A GPU trace's profiler steps that launched no device work: a step's GPU window is
    its work's, so they have none and are in no per-step figure — said, not dropped silently."""
    worked = set(intervals["step"].drop_nulls().unique().to_list())
    empty = sorted(s for s in spans["step"].unique().to_list() if s not in worked)
    if not empty:
        return
    listed = ", ".join(str(s) for s in empty[:STEPS_LISTED])
    more = f" and {len(empty) - STEPS_LISTED:,} more" if len(empty) > STEPS_LISTED else ""
    yield Note(
        message=f"profiler {noun(len(empty), 'step')} {listed}{more} launched no GPU work: a "
        "step's GPU window is its work's, so they are in no per-step figure (the work of a step "
        "may have been launched in another, or the loop did host work only)"
    )
