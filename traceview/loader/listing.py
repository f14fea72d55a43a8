"""What a run is, before any trace of it is parsed: what a run browser lists."""

from __future__ import annotations

import msgspec

from traceview.analysis.scaling import record_step_times
from traceview.errors import TraceviewError
from traceview.loader.sources import RunSource
from traceview.parse.run_record import RunRecord, read_run_record


class RunSummary(msgspec.Struct, frozen=True, kw_only=True):
    source: RunSource
    strategy: str | None  # from the run record, when there is one
    dp: int | None
    traces: int
    preset: str | None
    samples_per_s: float | None  # the global batch over the median measured step
    problem: str | None = None  # why the run record could not be read


def summarize(source: RunSource) -> RunSummary:
    """The run's trace count and its run record's headline, reading only run.json."""
    record: RunRecord | None = None
    problem = source.unfinished
    if source.folder is not None and problem is None:
        try:
            record = read_run_record(source.folder)
        except TraceviewError as e:
            problem = e.message
    times = record_step_times(record) if record else None
    return RunSummary(
        source=source,
        traces=len(source.files),
        strategy=record.strategy if record else None,
        dp=record.world_size if record else None,
        preset=record.config.preset if record else None,
        samples_per_s=record.global_batch.samples / times.median_s
        if record and times and times.median_s
        else None,
        problem=problem,
    )
