"""Batches of decoded or scanned events -> the finished events table, in groups."""

from __future__ import annotations

import msgspec
import polars as pl

from traceview.errors import Note
from traceview.parse.args import LAUNCH_SCHEMA
from traceview.parse.budget import EventBudget
from traceview.parse.categories import CATEGORY
from traceview.parse.columns import (
    BATCH_SCHEMA,
    COMM_ARGS_SCHEMA,
    complete_events,
    scanned_events,
)
from traceview.parse.events import DecodedBatch
from traceview.parse.fast import ScannedBatch
from traceview.parse.readers import INT64_MAX
from traceview.plain import counted, noun
from traceview.queries import all_collected


class Events:
    """Batches in, finished frames out. Finished in groups: the events are never held twice,
    and polars' fixed cost per call is paid once per FINISH_ROWS events, not once per batch."""

    def __init__(self, budget: EventBudget | None = None) -> None:
        self.budget = budget
        self.frames: list[pl.DataFrame] = []
        self.comm: list[pl.DataFrame] = []
        self.unreadable = Unreadable()
        self.rows = 0  # complete events so far, the unreadable ones included
        self._finished_rows = 0
        self._decoded: list[pl.DataFrame] = []  # frames waiting to be finished together
        self._scanned: list[ScannedBatch] = []  # columns waiting to become one frame
        self.name_bytes = 0  # what the budget was charged for names
        self._names_seen = 0  # the scanner's distinct names, when last counted
        self._decoded_names: set[str] = set()  # those of events decoded apart, so far

    def _new_name_bytes(self, names: pl.Series) -> int:
        """The bytes of the distinct names the scanner has met since the last batch (its
        `names` are all it has met so far)."""
        if len(names) == self._names_seen:
            return 0
        fresh = names.slice(self._names_seen)
        self._names_seen = len(names)
        return int(fresh.cast(pl.String).str.len_bytes().sum() or 0)  # (cat.len_bytes: all)

    def add(self, batch: DecodedBatch | ScannedBatch) -> None:
        if self.budget is not None:  # before the batch's rows become frames
            if isinstance(batch, ScannedBatch):
                rows, names = batch.rows, self._new_name_bytes(batch.names)
            else:
                fresh = {e.name for e in batch.complete} - self._decoded_names
                self._decoded_names |= fresh
                rows, names = len(batch.complete), sum(len(n.encode()) for n in fresh)
            self.budget.take(rows, names)
            self.name_bytes += names
        if isinstance(batch, ScannedBatch):
            self._scanned.append(batch)
            self.rows += batch.rows
        else:
            self._frame_scanned()  # keeps the rows in order
            frame, comm = complete_events(batch.complete, self.rows)
            self.rows += frame.height
            self._decoded.append(frame)
            self.comm.append(comm)
        if self.rows - self._finished_rows >= FINISH_ROWS:
            self.finish()

    def _frame_scanned(self) -> None:
        if self._scanned:
            first = self.rows - sum(b.rows for b in self._scanned)
            frame, comm = scanned_events(self._scanned, first)
            self._decoded.append(frame)
            self.comm.append(comm)
            self._scanned = []

    def finish(self) -> None:
        self._frame_scanned()
        if self._decoded:
            frame = pl.concat(self._decoded)
            self.frames.append(finished(frame, self._finished_rows, self.unreadable))
            self._decoded, self._finished_rows = [], self.rows

    def table(self) -> pl.DataFrame:
        return (
            pl.concat(self.frames, rechunk=False)
            if self.frames
            else finished(pl.DataFrame(schema=BATCH_SCHEMA), 0, self.unreadable)
        )

    def comm_args(self) -> pl.DataFrame:
        return pl.concat(self.comm) if self.comm else pl.DataFrame(schema=COMM_ARGS_SCHEMA)

    def extend(self, later: Events) -> None:
        """Append the events of the trace's bytes after these (read apart): rows renumbered."""
        self.finish()
        later.finish()
        shift = pl.col("row") + self.rows
        self.frames += [f.with_columns(shift) for f in later.frames]
        self.comm += [c.with_columns(shift) for c in later.comm]
        self.rows += later.rows
        self._finished_rows = self.rows
        self.unreadable.add(later.unreadable)


class Unreadable(msgspec.Struct):
    """Events skipped while finishing the batches, for the notes."""

    missing: int = 0  # no readable ts or dur
    negative: int = 0  # a negative duration
    placeless: int = 0  # no pid or tid: on no lane

    def add(self, other: Unreadable) -> None:
        self.missing += other.missing
        self.negative += other.negative
        self.placeless += other.placeless

    def notes(self) -> list[Note]:
        out = []
        if self.missing:
            out.append(
                Note(
                    message=f"{counted(self.missing, 'complete event')} without a readable ts "
                    f"or dur (missing, or beyond int64 nanoseconds) {_were(self.missing)} skipped",
                    severity="lossy",
                )
            )
        if self.negative:
            out.append(
                Note(
                    message=f"{counted(self.negative, 'event')} with negative durations "
                    f"{_were(self.negative)} skipped",
                    severity="lossy",
                )
            )
        if self.placeless:
            out.append(
                Note(
                    message=f"{counted(self.placeless, 'event')} without a process or thread id "
                    f"(pid, tid) {_were(self.placeless)} skipped: on no thread or stream",
                    severity="lossy",
                )
            )
        return out


def _were(n: int) -> str:
    return noun(n, "was", "were")


FINISH_ROWS = 1 << 16
# Categories no analysis reads (Python frames, Kineto's own spans, GPU annotations): dropped
# as they are read. Their rows keep their numbers, so the others' stay as the args refer to them.
# Device work of accelerators the model does not read is kept, to be counted and named.
UNUSED_CATEGORIES = ("gpu_annotation", "python", "other")
USED_CATEGORIES = tuple(c for c in CATEGORY.categories if c not in UNUSED_CATEGORIES)


def finished(frame: pl.DataFrame, first_row: int, unreadable: Unreadable) -> pl.DataFrame:
    """Batches as Trace.events holds them: rows numbered, unreadable events counted and
    dropped, and the categories no analysis reads."""
    events = (
        frame.lazy()
        .with_columns(row=pl.int_range(first_row, first_row + pl.len(), dtype=pl.Int64))
        # An end past int64 nanoseconds (ts and dur each in range, their sum not) is unreadable.
        .with_columns(
            pl.when(pl.col("ts_ns") <= INT64_MAX - pl.col("dur_ns").clip(0)).then(pl.col("ts_ns"))
        )
    )
    readable = pl.col("ts_ns").is_not_null() & (pl.col("dur_ns") >= 0)
    placed = pl.col("pid").is_not_null() & pl.col("tid").is_not_null()
    used = pl.col("cat").is_in(USED_CATEGORIES)
    counts = events.select(
        missing=(pl.col("ts_ns").is_null() | pl.col("dur_ns").is_null()).sum(),
        negative=(pl.col("dur_ns") < 0).sum(),
        placeless=(readable & used & ~placed).sum(),
    )
    kept = events.filter(readable & placed & used).select(
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
        **{c: c for c in LAUNCH_SCHEMA},
    )
    counted, out = all_collected([counts, kept], frame.height)
    unreadable.add(Unreadable(*(int(counted[c][0]) for c in ("missing", "negative", "placeless"))))
    return out
