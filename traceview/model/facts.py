"""What a timeline says of its trace beyond its intervals (the notes' counts, the wrappers, whether
GPU work was launched), counted for every trace of a batch (model/batch.py) in one query over
its events and one over its intervals: a query a trace each had cost more than their rows."""

from __future__ import annotations

from typing import Any, NamedTuple

import polars as pl

from traceview.model.batch import PART
from traceview.model.gpu import RUNTIME_RECORD, library_kernel
from traceview.parse.names import GPU_COLLECTIVE_SPAN, WRAPPER_SPANS, named
from traceview.queries import collected

UNNUMBERED_STEP = r"^ProfilerStep#\d{19,}$"  # a number too long for int64 (model/steps.py)


class EventFacts(NamedTuple):
    unnumbered_steps: int  # ProfilerStep spans whose number cannot be read
    accelerator_events: int  # device events of an accelerator the model does not read
    runtime_records: int  # collectives timed by a runtime's own records, read as communication
    launches_gpu_work: bool  # runtime calls or NCCL collectives, recorded GPU work or not
    wrappers: tuple[str, ...]  # the data-parallel wrappers whose record functions it holds


class IntervalFacts(NamedTuple):
    work: int  # intervals of compute, communication and memory work
    unlaunched: tuple[int, int, int]  # (kernels, memcpy, memset) whose launch is not in it
    outside: int  # work in no step
    launched_outside: int  # work whose launch is in the trace, in no step
    has_comm: bool


def event_facts(events: pl.DataFrame, n: int) -> list[EventFacts]:
    """Each of the batch's n traces' EventFacts."""
    launching = (pl.col("cat") == "runtime") | named(events, GPU_COLLECTIVE_SPAN)
    counts = [
        named(events, UNNUMBERED_STEP).sum().alias("unnumbered"),
        (pl.col("cat") == "accelerator").sum().alias("accelerator"),
        RUNTIME_RECORD.sum().alias("records"),
        library_kernel(events).any().alias("library_kernels"),
        launching.any().alias("launching"),
        *(named(events, pattern).any().alias(name) for name, pattern in WRAPPER_SPANS.items()),
    ]
    found = _per_part(events, counts, n)
    return [
        EventFacts(
            row.get("unnumbered", 0),
            row.get("accelerator", 0),
            # read only where no library kernel times the same collectives (model/gpu.py)
            0 if row.get("library_kernels") else row.get("records", 0),
            row.get("launching", False),
            tuple(name for name in WRAPPER_SPANS if row.get(name)),
        )
        for row in found
    ]


def interval_facts(intervals: pl.DataFrame, n: int) -> list[IntervalFacts]:
    """Each of the batch's n traces' IntervalFacts (`intervals`: theirs, with their part)."""
    work = pl.col("kind") != "other"
    unlaunched = work & pl.col("launch_ns").is_null()
    memory = pl.col("kind") == "memory"
    memset = named(intervals, "(?i)memset")
    outside = work & pl.col("step").is_null()
    counts = [
        work.sum().alias("work"),
        (unlaunched & ~memory).sum().alias("kernels"),
        (unlaunched & memory & ~memset).sum().alias("memcpy"),
        (unlaunched & memory & memset).sum().alias("memset"),
        outside.sum().alias("outside"),
        (outside & pl.col("launch_ns").is_not_null()).sum().alias("launched_outside"),
        (pl.col("kind") == "comm").any().alias("has_comm"),
    ]
    found = _per_part(intervals, counts, n)
    return [
        IntervalFacts(
            int(row.get("work") or 0),
            (
                int(row.get("kernels") or 0),
                int(row.get("memcpy") or 0),
                int(row.get("memset") or 0),
            ),
            int(row.get("outside") or 0),
            int(row.get("launched_outside") or 0),
            bool(row.get("has_comm")),
        )
        for row in found
    ]


def _per_part(frame: pl.DataFrame, counts: list[pl.Expr], n: int) -> list[dict[str, Any]]:
    """The counts over each part's rows, as a dict a part (empty for a part without rows)."""
    if PART not in frame.columns:
        return collected(frame.lazy().select(counts), frame.height).to_dicts()
    rows = collected(frame.lazy().group_by(PART).agg(counts), frame.height)
    by_part = {row.pop(PART): row for row in rows.to_dicts()}
    return [by_part.get(i, {}) for i in range(n)]
