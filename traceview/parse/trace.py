"""read_trace(path) -> Trace: the one entry point of the parse layer."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from traceview.errors import NotATraceError, Note, TraceviewError
from traceview.parse.columns import (
    BATCH_SCHEMA,
    COMM_ARGS_SCHEMA,
    category,
    complete_events,
    nanoseconds,
    thread_names,
)
from traceview.parse.metadata import TraceMeta, read_meta
from traceview.parse.source import ByteSource, ProgressFn
from traceview.parse.stream import EventStream, NotATrace, StreamError


@dataclass(frozen=True, kw_only=True)
class Trace:
    """One rank's trace, decoded. `events` holds every complete ("X") event, times in ns."""

    path: Path
    meta: TraceMeta
    events: pl.DataFrame  # row, ts_ns, end_ns, name, cat, pid, tid, correlation, ...
    comm_args: pl.DataFrame  # row -> collective arguments, for the few ops that have them
    thread_names: dict[tuple[int, int], tuple[str, ...]]
    notes: tuple[Note, ...]
    size_bytes: int  # uncompressed
    truncated: bool


def read_trace(path: str | Path, progress: ProgressFn | None = None) -> Trace:
    path = Path(path)
    source = ByteSource(path)
    stream = EventStream(source.chunks(progress))
    frames: list[pl.DataFrame] = []
    comm_frames: list[pl.DataFrame] = []
    names: dict[tuple[int, int], list[str]] = {}
    rows = 0
    try:
        for batch in stream.batches():
            frame, comm = complete_events(batch.complete, rows)
            rows += frame.height
            frames.append(frame)
            comm_frames.append(comm)
            thread_names(batch.metadata, names)
    except NotATrace as e:
        raise NotATraceError(f"{path}: {e}") from None
    except StreamError as e:
        where = " (the gzip stream is cut short)" if source.cut_short else ""
        raise TraceviewError(f"{path}: {e}{where}") from None

    notes: list[Note] = []
    result = stream.result
    truncated = result.truncated or source.cut_short
    if truncated:
        notes.append(_truncation_note(source, result.lost_bytes, result.lost_trailer, rows))
    if result.retyped_events:
        notes.append(
            Note(message=f"{result.retyped_events:,} events had fields of unexpected types")
        )
    if result.dropped_events:
        notes.append(
            Note(
                message=f"{result.dropped_events:,} events could not be read and were skipped",
                severity="lossy",
            )
        )
    events = _finish_events(frames, notes)
    return Trace(
        path=path,
        meta=read_meta(result.metadata, notes),
        events=events,
        comm_args=pl.concat(comm_frames) if comm_frames else pl.DataFrame(schema=COMM_ARGS_SCHEMA),
        thread_names={k: tuple(v) for k, v in names.items()},
        notes=tuple(notes),
        size_bytes=source.uncompressed_bytes,
        truncated=truncated,
    )


def _truncation_note(source: ByteSource, lost: int, lost_trailer: bool, kept: int) -> Note:
    what = "the keys after the events" if lost_trailer else "an incomplete last event"
    return Note(
        message=f"trace is truncated at byte {source.uncompressed_bytes:,}: kept {kept:,} complete "
        f"events, lost {lost:,} bytes ({what})",
        severity="lossy",
    )


def _finish_events(frames: list[pl.DataFrame], notes: list[Note]) -> pl.DataFrame:
    events = pl.concat(frames) if frames else pl.DataFrame(schema=BATCH_SCHEMA)
    events = events.with_row_index("row").with_columns(
        pl.col("row").cast(pl.Int64),
        cat=category(pl.col("cat")),
        ts_ns=pl.coalesce("ts_exact_ns", nanoseconds(pl.col("ts_us"))),
        dur_ns=nanoseconds(pl.col("dur_us")),
    )
    missing = events.filter(pl.col("ts_ns").is_null() | pl.col("dur_ns").is_null()).height
    negative = events.filter(pl.col("dur_ns") < 0).height
    if missing:
        notes.append(
            Note(
                message=f"{missing:,} complete events without ts or dur were skipped",
                severity="lossy",
            )
        )
    if negative:
        notes.append(
            Note(
                message=f"{negative:,} events with negative durations were skipped",
                severity="lossy",
            )
        )
    return (
        events.filter(pl.col("ts_ns").is_not_null() & (pl.col("dur_ns") >= 0))
        .with_columns(end_ns=pl.col("ts_ns") + pl.col("dur_ns"))
        .drop("ts_us", "ts_exact_ns", "dur_us", "dur_ns")
    )
