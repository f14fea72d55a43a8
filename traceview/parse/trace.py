"""read_trace(path) -> Trace: the one entry point of the parse layer."""

from __future__ import annotations

from pathlib import Path

import msgspec
import polars as pl

from traceview.errors import NotATraceError, Note, TraceviewError
from traceview.inputs import ProgressFn
from traceview.parse import fast, halves
from traceview.parse.budget import EventBudget, OverBudget, machine_memory
from traceview.parse.collect import Events
from traceview.parse.columns import (
    thread_names,
)
from traceview.parse.decode import StreamResult, TrailerUnread
from traceview.parse.metadata import TraceMeta, read_meta
from traceview.parse.source import ByteSource
from traceview.parse.stream import MAX_EVENT_BYTES, EventStream, NotATrace, Pause, StreamError
from traceview.plain import counted, noun
from traceview.remote import as_path


class Trace(msgspec.Struct, frozen=True, kw_only=True):
    """One rank's trace, decoded. `events` holds every complete ("X") event, times in ns."""

    path: Path
    meta: TraceMeta
    events: pl.DataFrame  # row, ts_ns, end_ns, name, cat, pid, tid, correlation, ...
    # row -> the kept args (parse/names.py KEEPS_ARGS: collectives' and gradients' shapes)
    comm_args: pl.DataFrame
    thread_names: dict[tuple[int, int], tuple[str, ...]]
    notes: tuple[Note, ...]
    size_bytes: int  # uncompressed
    truncated: bool


def read_trace(
    path: str | Path,
    progress: ProgressFn | None = None,
    max_event_bytes: int = MAX_EVENT_BYTES,
    max_memory_bytes: int | None = None,
) -> Trace:
    """`max_memory_bytes`: the memory bound of the analysis (parse/budget.py; default: the
    machine's memory): a trace with more events than it allows is refused as they are read."""
    path = as_path(path)
    source = ByteSource(path)
    budget = EventBudget(max_memory_bytes or machine_memory())
    split = halves.plan(source)
    second = halves.SecondHalf(path, split, max_event_bytes, budget).start() if split else None
    if second and progress:
        report = progress
        progress = lambda done, size: report(done + second.consumed, size)  # noqa: E731
    stream = EventStream(
        source.chunks(progress, mapped=fast.available()),
        max_event_bytes,
        pause_at=split.pause_at if split else None,
    )
    names: dict[tuple[int, int], list[str]] = {}
    events = Events(budget)
    size = 0
    zero_tail = 0  # of the half that read the file's end
    # Scanned on this thread, batch by batch, as the tables are made (on a thread of its own,
    # a few batches ahead, it saved no time: CHANGELOG.md, "Speed mechanisms measured"); at a
    # pause nothing past it is scanned.
    batches = stream.batches()
    try:
        for batch in batches:
            if isinstance(batch, Pause):
                if second and second.joins(batch.next, stream.precise):
                    _join(stream.result, events, names, second)
                    size, zero_tail = second.size, second.zero_tail
                    break
                continue
            events.add(batch)
            thread_names(batch.metadata, names)
        events.finish()
    except NotATrace as e:
        raise NotATraceError(f"{path}: {e}") from None
    except OverBudget as e:
        raise TraceviewError(f"{path}: {e.message}") from None
    except StreamError as e:
        where = " (the gzip stream is cut short)" if source.cut_short else ""
        raise TraceviewError(f"{path}: {e}{where}") from None
    finally:
        batches.close()  # type: ignore[attr-defined]  # a generator: its thread stops
        if second:
            second.cancel()
    size = size or source.uncompressed_bytes
    zero_tail = zero_tail or source.zero_tail

    notes: list[Note] = []
    result = stream.result
    truncated = result.truncated or source.cut_short
    if truncated:
        notes.append(_truncation_note(size, source.cut_short, result.lost_trailer, events.rows))
    if source.trailing_bytes:
        notes.append(
            Note(
                message=f"{source.trailing_bytes:,} bytes after the end of the gzip stream are "
                "not gzip data: ignored",
                severity="lossy",
            )
        )
    if zero_tail:
        notes.append(
            Note(
                message=f"{zero_tail:,} zero bytes end the trace: ignored (a crash while a "
                "file is written can leave its last blocks so, in place of what was being "
                "written)",
                severity="lossy",
            )
        )
    if result.trailing_bytes:
        notes.append(
            Note(
                message=f"{result.trailing_bytes:,} bytes after the end of the JSON document are "
                "not JSON: ignored",
                severity="lossy",
            )
        )
    if result.trailer_unread:
        notes.append(Note(message=_TRAILER_UNREAD[result.trailer_unread], severity="lossy"))
    if result.retyped_events:
        notes.append(
            Note(
                message=f"{counted(result.retyped_events, 'event')} had fields of unexpected types"
            )
        )
    if result.repaired_events:
        notes.append(
            Note(
                message=f"{counted(result.repaired_events, 'batch', 'batches')} of events held "
                "bytes that are not UTF-8: they were replaced (U+FFFD)",
                severity="lossy",
            )
        )
    if result.dropped_events:
        notes.append(
            Note(
                message=f"{counted(result.dropped_events, 'event')} could not be read and "
                f"{noun(result.dropped_events, 'was', 'were')} skipped",
                severity="lossy",
            )
        )
    notes += events.unreadable.notes()
    table, far = _without_far_events(events.table())
    if far:
        notes.append(
            Note(
                message=f"{counted(far, 'event')} {noun(far, 'lies', 'lie')} more than a day "
                "from the trace's other events (a corrupt timestamp or duration): skipped",
                severity="lossy",
            )
        )
    lost = events.unreadable
    readable = events.rows - lost.missing - lost.negative - lost.placeless
    if readable and table.height == 0 and not truncated:
        raise NotATraceError(
            f"{path}: not a PyTorch profiler trace: none of its {readable:,} events has a "
            "category the profiler writes (cpu_op, kernel, cuda_runtime, ...); an export of "
            "the legacy torch.autograd.profiler? Record with torch.profiler.profile"
        )
    return Trace(
        path=path,
        meta=read_meta(result.metadata, notes),
        events=table,
        comm_args=events.comm_args(),
        thread_names={k: tuple(v) for k, v in names.items()},
        notes=tuple(notes),
        size_bytes=size,
        truncated=truncated,
    )


# One profiling window lasts seconds to minutes: an event a day from the middle of the others
# is a corrupt timestamp (or duration), and would stretch every window it falls in.
FAR_NS = 86_400 * 10**9


def _without_far_events(table: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The events without those starting or ending more than FAR_NS from the median start,
    and how many those were."""
    if table.height == 0:
        return table, 0
    first, last = table.select(pl.col("ts_ns").min(), pl.col("end_ns").max()).row(0)
    if last - first <= FAR_NS:  # every event lies within a day of any start, the median's too
        return table, 0
    middle = int(table.select(pl.col("ts_ns").median()).item())
    near = (pl.col("ts_ns") >= middle - FAR_NS) & (pl.col("end_ns") <= middle + FAR_NS)
    far = table.height - int(table.select(near.sum()).item())
    return (table.filter(near) if far else table), far


def _join(
    result: StreamResult,
    events: Events,
    names: dict[tuple[int, int], list[str]],
    second: halves.SecondHalf,
) -> None:
    """The second half's events and findings after the first half's."""
    assert second.result is not None
    events.extend(second.events)
    for thread, named in second.names.items():
        names.setdefault(thread, []).extend(named)
    later = second.result
    result.metadata.update(later.metadata)  # the keys after the events
    result.truncated, result.lost_trailer = later.truncated, later.lost_trailer
    result.retyped_events += later.retyped_events
    result.dropped_events += later.dropped_events
    result.repaired_events += later.repaired_events
    result.trailing_bytes += later.trailing_bytes
    result.trailer_unread = later.trailer_unread


_TRAILER_UNREAD: dict[TrailerUnread, str] = {
    "repaired": "the keys after the events held bytes that are not UTF-8: they were replaced "
    "(U+FFFD)",
    "too deep": "the keys after the events are nested too deep to read: they were skipped (a "
    "rank or world size among them is unknown)",
}


def _truncation_note(size: int, gzip_cut: bool, lost_trailer: bool, kept: int) -> Note:
    at = f"trace is cut short at byte {size:,}"
    if gzip_cut:
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
