"""read_trace(path) -> Trace: the one entry point of the parse layer."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from traceview.errors import NotATraceError, Note, TraceviewError
from traceview.parse.columns import (
    BATCH_SCHEMA,
    COMM_ARGS_SCHEMA,
    INT64_MAX,
    category,
    complete_events,
    nanoseconds,
    thread_names,
)
from traceview.parse.metadata import TraceMeta, read_meta
from traceview.parse.source import ByteSource, ProgressFn
from traceview.parse.stream import MAX_EVENT_BYTES, EventStream, NotATrace, StreamError


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


def read_trace(
    path: str | Path,
    progress: ProgressFn | None = None,
    max_event_bytes: int = MAX_EVENT_BYTES,
) -> Trace:
    path = Path(path)
    source = ByteSource(path)
    stream = EventStream(source.chunks(progress), max_event_bytes)
    frames: list[pl.DataFrame] = []
    comm_frames: list[pl.DataFrame] = []
    names: dict[tuple[int, int], list[str]] = {}
    unreadable = Unreadable()
    raw: list[pl.DataFrame] = []  # decoded batches waiting to be finished together
    rows = finished_rows = 0
    try:
        for batch in stream.batches():
            frame, comm = complete_events(batch.complete, rows)
            rows += frame.height
            raw.append(frame)
            comm_frames.append(comm)
            thread_names(batch.metadata, names)
            # Finished in groups: the events are never held twice, and polars' fixed cost per
            # call is paid once per FINISH_ROWS events, not once per batch.
            if rows - finished_rows >= FINISH_ROWS:
                frames.append(_finished(pl.concat(raw), finished_rows, unreadable))
                raw, finished_rows = [], rows
        if raw:
            frames.append(_finished(pl.concat(raw), finished_rows, unreadable))
    except NotATrace as e:
        raise NotATraceError(f"{path}: {e}") from None
    except StreamError as e:
        where = " (the gzip stream is cut short)" if source.cut_short else ""
        raise TraceviewError(f"{path}: {e}{where}") from None

    notes: list[Note] = []
    result = stream.result
    truncated = result.truncated or source.cut_short
    if truncated:
        notes.append(_truncation_note(source, result.lost_trailer, rows))
    if source.trailing_bytes:
        notes.append(
            Note(
                message=f"{source.trailing_bytes:,} bytes after the end of the gzip stream are "
                "not gzip data: ignored",
                severity="lossy",
            )
        )
    if result.retyped_events:
        notes.append(
            Note(message=f"{result.retyped_events:,} events had fields of unexpected types")
        )
    if result.repaired_events:
        notes.append(
            Note(
                message=f"{result.repaired_events:,} batches of events held bytes that are not "
                "UTF-8: they were replaced (U+FFFD)",
                severity="lossy",
            )
        )
    if result.dropped_events:
        notes.append(
            Note(
                message=f"{result.dropped_events:,} events could not be read and were skipped",
                severity="lossy",
            )
        )
    notes += unreadable.notes()
    events = (
        pl.concat(frames, rechunk=False)
        if frames
        else _finished(pl.DataFrame(schema=BATCH_SCHEMA), 0, unreadable)
    )
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


def _truncation_note(source: ByteSource, lost_trailer: bool, kept: int) -> Note:
    at = f"trace is cut short at byte {source.uncompressed_bytes:,}"
    if source.cut_short:
        at += " (its gzip stream ends early)"
    if lost_trailer:
        return Note(
            message=f"{at}, after its events: the keys that followed them are missing",
            severity="lossy",
        )
    return Note(
        message=f"{at}, inside an event: kept {kept:,} complete events; the event cut and "
        "everything the file held after it are missing",
        severity="lossy",
    )


@dataclass
class Unreadable:
    """Events skipped while finishing the batches, for the notes."""

    missing: int = 0  # no readable ts or dur
    negative: int = 0  # a negative duration

    def notes(self) -> list[Note]:
        out = []
        if self.missing:
            out.append(
                Note(
                    message=f"{self.missing:,} complete events without a readable ts or dur "
                    "(missing, or beyond int64 nanoseconds) were skipped",
                    severity="lossy",
                )
            )
        if self.negative:
            out.append(
                Note(
                    message=f"{self.negative:,} events with negative durations were skipped",
                    severity="lossy",
                )
            )
        return out


FINISH_ROWS = 1 << 20
# Categories no analysis reads (Python frames, Kineto's own spans, GPU annotations): dropped
# as they are read. Their rows keep their numbers, so the others' stay as the args refer to them.
USED_CATEGORIES = ("kernel", "memcpy", "memset", "runtime", "cpu_op", "user_annotation")


def _finished(frame: pl.DataFrame, first_row: int, unreadable: Unreadable) -> pl.DataFrame:
    """A batch as Trace.events holds it: integer nanoseconds, categories folded, unreadable
    events counted and dropped."""
    events = (
        frame.lazy()
        .with_columns(
            row=pl.int_range(first_row, first_row + pl.len(), dtype=pl.Int64),
            cat=category(pl.col("cat")),
            ts_ns=pl.coalesce("ts_exact_ns", nanoseconds(pl.col("ts_us"))),
            dur_ns=nanoseconds(pl.col("dur_us")),
        )
        # An end past int64 nanoseconds (ts and dur each in range, their sum not) is unreadable.
        .with_columns(
            pl.when(pl.col("ts_ns") <= INT64_MAX - pl.col("dur_ns").clip(0)).then(pl.col("ts_ns"))
        )
    )
    counts = events.select(
        missing=(pl.col("ts_ns").is_null() | pl.col("dur_ns").is_null()).sum(),
        negative=(pl.col("dur_ns") < 0).sum(),
    )
    kept = events.filter(
        pl.col("ts_ns").is_not_null()
        & (pl.col("dur_ns") >= 0)
        & pl.col("cat").is_in(USED_CATEGORIES)
    ).select(
        "row",
        "ts_ns",
        end_ns=pl.col("ts_ns") + pl.col("dur_ns"),
        name="name",
        cat="cat",
        pid="pid",
        tid="tid",
        correlation="correlation",
        device="device",
        stream="stream",
    )
    counted, out = pl.collect_all([counts, kept])
    unreadable.missing += int(counted["missing"][0])
    unreadable.negative += int(counted["negative"][0])
    return out
