"""One large trace read by two threads at once, each scanning half of the file.

The file is cut, by a guess, at the last event boundary before a chunk boundary near its middle;
a second reader reads from there to the end while the first reads from the start (each scans on
a thread of its own while another makes the tables of what it scanned). When the first
reaches the cut it checks the guess: the pure reading must start its next batch exactly there
(a "boundary" inside a string or a nested value fails the check). Only then are the second
thread's events used; otherwise the first thread reads on, and the result is as if read alone.
The halves cut their batches where a sequential read does, so every count matches too.

Only plain files large enough to pay for a thread, and only with the compiled scanner: the
pure-Python path holds the interpreter's lock while it decodes.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from traceview.parse import fast
from traceview.parse import source as source_module
from traceview.parse.budget import EventBudget
from traceview.parse.collect import Events
from traceview.parse.columns import thread_names
from traceview.parse.decode import StreamResult
from traceview.parse.source import GZIP_MAGIC, ByteSource
from traceview.parse.stream import EventStream

SPLIT_MIN_BYTES = 48 << 20  # below this a second thread costs more than it saves
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_LOOK_BACK = 1 << 20  # how far before the middle a boundary is looked for


class Split(msgspec.Struct, frozen=True):
    pause_at: int  # where the first half pauses: a multiple of CHUNK_SIZE
    start: int  # where the second half's first event starts (the guess)


def plan(source: ByteSource) -> Split | None:
    """Where to cut a plain file in two, or None when it is not worth it (or not possible)."""
    size = source.size_on_disk
    if source.stream or size < SPLIT_MIN_BYTES or not fast.available():
        return None
    chunk = source_module.CHUNK_SIZE
    middle = size // 2 // chunk * chunk
    if middle <= 0:
        return None
    low = max(0, middle - _LOOK_BACK)
    try:
        with source.path.open("rb") as f:
            if f.read(2) == GZIP_MAGIC:
                return None
            f.seek(low)
            window = f.read(middle - low)
    except OSError:
        return None  # the first half reports it
    last = None
    for last in _BOUNDARY.finditer(window):  # noqa: B007  # the last one is wanted
        pass
    return None if last is None else Split(middle, low + last.end() - 1)


@dataclass
class SecondHalf:
    """The events from `split.start` to the end of the file, read on a thread of its own."""

    path: Path
    split: Split
    max_event_bytes: int
    budget: EventBudget
    consumed: int = 0  # bytes read so far, for the progress line
    events: Events = field(init=False)
    names: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    result: StreamResult | None = None  # set when it read to the end
    decoded_unsure: bool = False  # see EventStream.decoded_unsure
    size: int = 0  # the file's bytes, both halves together
    zero_tail: int = 0  # the zero bytes that end the file (ByteSource.zero_tail)
    _cancel: threading.Event = field(default_factory=threading.Event)
    _cancelled: bool = False
    _thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        self.events = Events(self.budget)

    def start(self) -> SecondHalf:
        self._thread = threading.Thread(target=self._read, name="traceview-half", daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        source = ByteSource(self.path)
        chunks = source.chunks_from(
            self.split.start, self.split.pause_at, self._progress, mapped=True
        )
        stream = EventStream(chunks, self.max_event_bytes, start=self.split.start)
        batches = stream.batches()
        try:
            for batch in batches:
                if self._cancel.is_set():
                    return
                self.events.add(batch)  # type: ignore[arg-type]  # no Pause without pause_at
                thread_names(batch.metadata, self.names)  # type: ignore[union-attr]
            self.events.finish()
        except Exception:  # the first half reads these bytes again, and says what is wrong
            return
        finally:
            batches.close()  # type: ignore[attr-defined]
        self.decoded_unsure = stream.decoded_unsure
        self.size = self.split.start + source.uncompressed_bytes
        self.zero_tail = source.zero_tail
        self.result = stream.result

    def _progress(self, consumed: int, _size: int) -> None:
        self.consumed = consumed - self.split.start

    def joins(self, next_start: int, precise: bool) -> bool:
        """Whether the first half, paused with its next event at `next_start`, may stop there:
        the guess was right and the second half read the rest as the first would have. It
        starts out not knowing that the trace's timestamps need decimals; where the first half
        learnt they do, the second must have learnt it too before decoding any event the
        pure-Python way."""
        if next_start != self.split.start:
            self.cancel()  # a wrong guess: the first half reads on alone
            return False
        assert self._thread is not None
        self._thread.join()
        if self.result is not None and not (precise and self.decoded_unsure):
            return True
        self.cancel()  # the first half reads these events again
        return False

    def cancel(self) -> None:
        """Stop it; its events no longer count against the budget (the first half reads them,
        or the trace is done with)."""
        self._cancel.set()
        if self._thread is not None:
            self._thread.join()
        if not self._cancelled:
            self.budget.give_back(self.events.rows, self.events.name_bytes)
            self._cancelled = True
