"""Split the `traceEvents` array of a Chrome/Kineto trace into decoded batches, streaming.

The file is never held whole: each chunk of bytes is cut at the last event boundary
(`}` `,` `{` at the top level of the array) and decoded on its own. A boundary inside a string
is told apart by the parity of the quotes before it; one inside a nested value leaves a batch
that cannot decode, and the next boundary to the left is tried. What is left when the bytes run
out is the last event plus the end of the document; if that does not decode, the file was cut
short and the complete events before the cut are kept.

The work is bounded whatever the input: the header is looked for in the first MAX_HEADER_BYTES,
and an event (a stretch without a boundary) may not exceed `max_event_bytes`; each byte is
scanned a bounded number of times. A batch the fast decoder refuses (a field of an unexpected
type, nesting deeper than the decoder recurses, bytes that are not UTF-8) is decoded event by
event, and the events that cannot be read are counted, not fatal.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import msgspec

from traceview.parse import fast, json_text
from traceview.parse.decode import BatchDecoder, StreamResult
from traceview.parse.events import (
    DecodedBatch,
)

# Bytes: what the pure-Python path searches (fast.Readable, less a view of a mapped file, which
# is copied out for it first).
from traceview.parse.json_text import Bytes
from traceview.parse.source import Chunk, Mapped

MAX_HEADER_BYTES = 64 << 20  # how far to look for `traceEvents` before calling it "not a trace"
_HEADER_PEEK = 64 << 10  # a mapped file's bytes in which the header is looked for first
MAX_EVENT_BYTES = 64 << 20  # the longest event (or stretch without a boundary) read by default
MAX_ODD_BATCHES = 4  # after this many batches the scanner leaves, the trace is all Python's


# What helps with a file that is no trace: it is said after every such refusal.
A_TRACE = "give a trace torch.profiler wrote (export_chrome_trace or tensorboard_trace_handler)"


class StreamError(Exception):
    """The bytes are not a trace; the message says why, for one line of output."""


class NotATrace(StreamError):
    """Well-formed JSON, but without a traceEvents array."""


class InvalidJSON(StreamError):
    """Bytes that no JSON document can hold, at a known place."""


class Pause(msgspec.Struct, frozen=True):
    """Yielded once the bytes up to `pause_at` are read and cut: the next event starts at
    byte `next` (or later, where no event ended in those bytes)."""

    next: int


class EventStream:
    def __init__(
        self,
        chunks: Iterable[Chunk],
        max_event_bytes: int = MAX_EVENT_BYTES,
        *,
        compiled: bool | None = None,
        start: int | None = None,
        pause_at: int | None = None,
    ) -> None:
        """`compiled`: use the compiled scanner (default: where it was built). `start`: the
        chunks begin at this byte of the file, where an event of the array begins (no header).
        `pause_at`: yield a Pause after cutting the bytes up to there."""
        self._chunks = chunks
        self._max_event = max_event_bytes
        self._start = start
        self._pause_at = pause_at
        self.result = StreamResult()
        self._offset = start or 0  # file offset of the start of the current buffer
        self._searched = 0  # buf[:_searched] holds no boundary that cut it (reset on each cut)
        self._header_searched = 0  # buf[:_header_searched] holds no traceEvents key
        self._decoder = BatchDecoder(self.result)
        use = fast.available() if compiled is None else compiled
        self._scanner = fast.Scanner() if use else None
        # The events' array ends in the bytes read: nothing more is cut (a `}` `,` `{` in the
        # keys after it, a list of objects such as deviceProperties, is no boundary between
        # events), and what follows the last cut is read whole by _finish.
        self._array_ended = False
        self.odd_batches = 0  # batches the compiled scanner left to the pure-Python path

    @property
    def precise(self) -> bool:
        """Whether the timestamps read so far need decimals (epoch microseconds with fractions)."""
        return self._decoder.precise

    @property
    def decoded_unsure(self) -> bool:
        """See BatchDecoder.decoded_unsure."""
        return self._decoder.decoded_unsure

    def batches(self) -> Iterator[DecodedBatch | fast.ScannedBatch | Pause]:
        try:
            yield from self._batches()
        except InvalidJSON:
            # A gzip stream damaged in its middle inflates to garbage that zlib notices only
            # at the stream's end: read on (once, in order), so that is what is said.
            for chunk in self._chunks:
                if isinstance(chunk, Mapped):
                    break
            raise
        except fast.UnreadablePage:
            raise StreamError(
                "part of the file could not be read: it was cut short or rewritten while it was "
                "read, or the disk failed"
            ) from None

    def _batches(self) -> Iterator[DecodedBatch | fast.ScannedBatch | Pause]:
        # The bytes not yet cut into batches. Read chunks are appended to one bytearray and each
        # batch's bytes deleted from its front, so its memory is reused; a mapped file's are a
        # view of the file itself, not copied at all.
        buf: bytearray | memoryview = bytearray()
        # Start of undecoded events in buf; None while reading the header.
        pos: int | None = None if self._start is None else 0
        read = self._offset  # file offset of the end of buf
        for chunk in self._chunks:
            if isinstance(chunk, Mapped):
                buf, read = chunk.view[self._offset : chunk.end], chunk.end
            else:
                assert isinstance(buf, bytearray)
                buf += chunk
                read += len(chunk)
            if pos is None:
                pos = self._array_start(buf)
                if pos is None:
                    continue
            cut = None if self._array_ended else self._last_cut(buf, pos)
            if cut is None:
                self._check_event_size(buf, pos)
            else:
                batch, end = cut
                yield batch
                self._offset += end
                if isinstance(buf, memoryview):
                    buf = buf[end:]
                else:
                    del buf[:end]
                pos, self._searched = 0, 0
            if read == self._pause_at:
                yield Pause(self._offset + pos)
        if pos is None:
            pos = self._find_array(_bytes(buf), at_eof=True)
            assert pos is not None
        self._check_event_size(buf, pos)
        yield from self._finish(_bytes(buf), pos)

    def _check_event_size(self, buf: fast.Readable, pos: int) -> None:
        if len(buf) - pos > self._max_event:
            raise StreamError(
                f"no complete event in the {len(buf) - pos:,} bytes from byte "
                f"{self._offset + pos:,}: an event longer than the limit "
                f"({self._max_event >> 20} MB; raise it with --max-event-mb) or not a trace"
            )

    # -- the start ------------------------------------------------------------------------

    def _array_start(self, buf: fast.Readable) -> int | None:
        """_find_array, before the end of the input. A mapped file's header is looked for in its
        first bytes before all of them are copied out: it is most often there, and a copy of a
        first chunk costs a small trace a tenth of its reading. (What a key found there gives
        depends on the bytes before it alone; one not found is looked for further, as before.)"""
        if isinstance(buf, memoryview) and len(buf) > _HEADER_PEEK:
            start = self._find_array(fast.copy(buf[:_HEADER_PEEK]), at_eof=False)
            if start is not None:
                return start
        return self._find_array(_bytes(buf), at_eof=False)

    def _find_array(self, buf: Bytes, *, at_eof: bool) -> int | None:
        if len(buf) > MAX_HEADER_BYTES and not at_eof:
            self._explain_no_events(buf, at_eof)
        start = json_text.first_non_blank(buf)
        if start == len(buf):
            if at_eof:
                said = "empty file" if not buf else "file holds only white space"
                raise StreamError(f"{said}: nothing of a trace was written to it; {A_TRACE}")
            return None
        first = buf[start : start + 1]
        if first == b"[":
            self.result.bare_array = True
            return start + 1
        if first != b"{":
            head = bytes(buf[start : start + 16])
            raise StreamError(f"not JSON (starts with {head!r}); {A_TRACE}")
        # Keys found before were inside strings, and stay so: look only at what is new.
        for m in json_text.ARRAY_KEY.finditer(buf, max(start, self._header_searched - 64)):
            header = buf[start : m.end()] + b"]}"
            try:
                meta = json_text.decode_json(header)
            except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
                continue  # the key text sat inside a string value; look further
            if not isinstance(meta, dict):
                continue
            meta.pop("traceEvents", None)
            self.result.metadata.update(meta)
            return m.end()
        if at_eof:
            self._explain_no_events(buf, at_eof)
        self._header_searched = len(buf)
        return None

    @staticmethod
    def _explain_no_events(buf: Bytes, at_eof: bool) -> None:
        if not at_eof:
            raise StreamError(
                f"no traceEvents array in the first {MAX_HEADER_BYTES >> 20} MB: "
                "not a profiler trace"
            )
        try:
            json_text.decode_json(buf)
        except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
            raise StreamError(
                f"not valid JSON, and no traceEvents array found; {A_TRACE}"
            ) from None
        raise NotATrace(f"JSON without a traceEvents array: not a profiler trace; {A_TRACE}")

    # -- the middle -----------------------------------------------------------------------

    def _last_cut(
        self, buf: fast.Readable, pos: int
    ) -> tuple[DecodedBatch | fast.ScannedBatch, int] | None:
        """Decode buf[pos:] up to its last event boundary; return the batch and the next start."""
        if self._scanner is not None:
            scanned = self._scanner.scan(buf, pos, self._decoder.precise)
            if scanned.ended:  # the last event and the document's end are read below
                self._scanner = None
                self._array_ended = True
            if not scanned.odd:
                self._decoder.precise = scanned.precise
                return None if scanned.batch is None else (scanned.batch, scanned.next)
            self.odd_batches += 1
            if self.odd_batches >= MAX_ODD_BATCHES:
                self._scanner = None
        return self._decoded_cut(_bytes(buf), pos)

    def _decoded_cut(self, buf: Bytes, pos: int) -> tuple[DecodedBatch, int] | None:
        """_last_cut by the pure-Python path: boundaries found by quote parity, then decoded."""
        hi = len(buf)
        lo = max(pos, self._searched - 16)  # boundaries left of here were tried before
        for _ in range(json_text.MAX_CUT_RETRIES):
            close = json_text.rfind_boundary(buf, lo, hi, pos)
            if close is None:
                self._searched = len(buf)
                return None
            doc = b"".join((b"[", memoryview(buf)[pos : close + 1], b"]"))  # one copy
            try:
                batch = self._decoder.decode(doc)
            except msgspec.DecodeError as e:
                if json_text.CLOSED_EARLY in str(e):  # the array's `]` lies before the cut
                    self._array_ended = True
                    return None
                at = json_text.BYTE_AT.search(str(e))
                if at is not None and int(at[1]) < len(doc) - 1:
                    # Broken before the bracket added at the end: no cut further left can
                    # make the file valid JSON, so say where, rather than try them all.
                    raise InvalidJSON(
                        f"invalid JSON at byte {self._offset + pos + int(at[1]) - 1:,} "
                        f"({json_text.reason(e)})"
                    ) from None
                hi = close  # a boundary inside a nested value: go left
                continue
            nxt = json_text.BOUNDARY.match(buf, close)
            assert nxt is not None
            return batch, nxt.end() - 1
        raise StreamError(f"invalid JSON in the events near byte {self._offset + pos:,}")

    # -- the end --------------------------------------------------------------------------

    def _finish(self, buf: Bytes, pos: int) -> Iterator[DecodedBatch]:
        """The last event (unless the compiled scanner read it), then the keys after the
        array (object form)."""
        rest = buf[pos:]
        self._offset += pos  # file offset of rest
        body = rest.lstrip(json_text.WHITESPACE)
        if body.startswith(b"]"):  # no event left: an empty array, or the scanner read the last
            if not self.result.bare_array:
                self._read_trailer(body[1:], self._offset + len(rest) - len(body) + 1)
                return
            if not body[1:].strip(json_text.WHITESPACE):
                return
        if self.result.bare_array:
            yield from self._finish_array(rest)
            return
        # The array's end: after an event object; failing that, after anything (a value that is
        # no object, nested too deep to read, may be the last event).
        for end in (json_text.ARRAY_END, json_text.ANY_ARRAY_END):
            for m in json_text.last_matches(end, rest):
                try:
                    events = self._decoder.decode(b"[" + rest[: m.end() - 1] + b"]")
                except msgspec.DecodeError:
                    continue  # a "}]" inside the trailing keys, or the cut
                self._read_trailer(rest[m.end() :], self._offset + m.end())
                yield events
                return
        self._cut_short(rest, kept=0)

    def _finish_array(self, rest: Bytes) -> Iterator[DecodedBatch]:
        # The Chrome trace format lets the array form omit its closing bracket.
        body = rest.rstrip(json_text.WHITESPACE)
        body = body[:-1] if body.endswith(b"]") else body.rstrip(b",")
        try:
            yield self._decoder.decode(b"[" + body + b"]")
            return
        except msgspec.DecodeError:
            pass
        for m in json_text.last_matches(json_text.BOUNDARY, rest):
            try:
                events = self._decoder.decode(b"[" + rest[: m.start() + 1] + b"]")
            except msgspec.DecodeError:
                continue
            yield events
            self._cut_short(rest, kept=m.start() + 1)
            return
        self._cut_short(rest, kept=0)

    def _cut_short(self, rest: Bytes, kept: int) -> None:
        """The bytes after the last complete event do not decode. Invalid JSON inside them (a
        NaN, a stray byte) is an error at its offset; otherwise the file was cut short."""
        tail = rest[kept:].lstrip(json_text.WHITESPACE + b",")
        where = self._offset + len(rest) - len(tail)
        try:
            json_text.decode_json(b"[" + tail)
        except msgspec.DecodeError as e:
            at = json_text.BYTE_AT.search(str(e))
            if at is not None and int(at[1]) < len(tail):  # broken before the end: not a cut
                raise StreamError(
                    f"invalid JSON at byte {where + int(at[1]) - 1:,} ({json_text.reason(e)})"
                ) from None
        except RecursionError:  # nested too deep to read: is what follows it JSON?
            broken = json_text.first_unreadable(tail)
            if broken is not None:
                raise StreamError(f"invalid JSON at byte {where + broken:,}") from None
            self.result.dropped_events += 1  # whole: one more event dropped
            return
        except UnicodeDecodeError:
            pass
        self.result.truncated = True

    def _read_trailer(self, trailer: Bytes, at: int) -> None:
        """The keys after the events (`, "traceName": "..." }` in a whole file), which begin
        at byte `at`. Cut short, they are lost; not JSON (more events after a stray `]`, say),
        the trace is refused where they break, as other invalid JSON is; bytes after the
        document's end are counted and ignored. Bytes that are not UTF-8 are replaced, as in
        the events; keys nested too deep to read are skipped, and each is said."""
        head = b'{"traceEvents":[]'
        text = head + trailer
        try:
            meta = json_text.decode_json(text)
        except msgspec.DecodeError as e:
            broken = json_text.BYTE_AT.search(str(e))  # a cut has no place: the input ran out
            if broken is None:
                self.result.truncated = self.result.lost_trailer = True
                return
            place = int(broken[1])
            whole = (
                json_text.document_before(text, place) if json_text.CLOSED_EARLY in str(e) else None
            )
            if whole is None:
                raise StreamError(
                    f"invalid JSON at byte {at + place - len(head):,} ({json_text.reason(e)})"
                ) from None
            # The document is whole, and bytes follow it (a line another tool appended, say):
            # ignored, and said.
            meta, end = whole
            self.result.trailing_bytes = len(text) - end
        except UnicodeDecodeError:  # read as the events are: the bytes replaced (U+FFFD)
            self.result.trailer_unread = "repaired"
            self._read_trailer(json_text.utf8_replaced(trailer), at)
            return
        except RecursionError:  # a cut may lie past where it stopped: that is not known
            self.result.trailer_unread = "too deep"
            return
        if isinstance(meta, dict):
            meta.pop("traceEvents", None)
            self.result.metadata.update(meta)


def _bytes(buf: fast.Readable) -> Bytes:
    """A mapped file's bytes copied out for the pure-Python path, which searches them."""
    return fast.copy(buf) if isinstance(buf, memoryview) else buf
