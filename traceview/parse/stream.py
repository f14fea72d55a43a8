"""Split the `traceEvents` array of a Chrome/Kineto trace into decoded batches, streaming.

The file is never held whole: each chunk of bytes is cut at the last event boundary
(`}` `,` `{` at the top level of the array) and decoded on its own. A boundary found inside
a string would leave an unterminated string on its left, which cannot decode, so a batch that
decodes is proof that its cut was real; on failure the next boundary to the left is tried.
What is left when the bytes run out is the last event plus the end of the document; if that
does not decode, the file was cut short and the complete events before the cut are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from traceview.parse.events import (
    EVENTS,
    KNOWN_PHASES,
    LENIENT_EVENT,
    PRECISE_EVENTS,
    STRICT_EVENT,
    Batch,
    needs_precision,
)

_ARRAY_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_ARRAY_END = re.compile(rb"\}\s*\]")
_WHITESPACE = b" \t\r\n"
MAX_HEADER_BYTES = 64 << 20  # how far to look for `traceEvents` before calling it "not a trace"
MAX_CUT_RETRIES = 64


class StreamError(Exception):
    """The bytes are not a trace; the message says why, for one line of output."""


class NotATrace(StreamError):
    """Well-formed JSON, but without a traceEvents array."""


@dataclass
class StreamResult:
    """What the stream learned besides the events, filled in as it goes."""

    metadata: dict[str, Any] = field(default_factory=dict)  # top-level keys other than events
    bare_array: bool = False
    truncated: bool = False
    lost_bytes: int = 0  # bytes after the last complete event of a cut file
    lost_trailer: bool = False  # the events are whole but the keys after them were cut
    retyped_events: int = 0  # events decoded leniently after a type mismatch
    dropped_events: int = 0  # events whose fields could not be read at all


class EventStream:
    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = chunks
        self.result = StreamResult()
        self._offset = 0  # file offset of the start of the current buffer

    def batches(self) -> Iterator[Batch]:
        buf = b""
        it = iter(self._chunks)
        pos = None  # start of undecoded events in buf; None while reading the header
        for chunk in it:
            buf = buf + chunk if buf else chunk
            if pos is None:
                pos = self._find_array(buf, at_eof=False)
                if pos is None:
                    continue
            cut = self._last_cut(buf, pos)
            if cut is None:
                continue
            batch, end = cut
            yield batch
            self._offset += end
            buf, pos = buf[end:], 0
        if pos is None:
            pos = self._find_array(buf, at_eof=True)
            assert pos is not None
        yield from self._finish(buf, pos)

    # -- the start ------------------------------------------------------------------------

    def _find_array(self, buf: bytes, *, at_eof: bool) -> int | None:
        start = len(buf) - len(buf.lstrip(_WHITESPACE + b"\xef\xbb\xbf"))
        if start == len(buf):
            if at_eof:
                raise StreamError("empty file" if not buf else "file holds only white space")
            return None
        first = buf[start : start + 1]
        if first == b"[":
            self.result.bare_array = True
            return start + 1
        if first != b"{":
            raise StreamError(f"not JSON (starts with {buf[start : start + 16]!r})")
        for m in _ARRAY_KEY.finditer(buf, start):
            header = buf[start : m.end()] + b"]}"
            try:
                meta = msgspec.json.decode(header)
            except msgspec.DecodeError:
                continue  # the key text sat inside a string value; look further
            meta.pop("traceEvents", None)
            self.result.metadata.update(meta)
            return m.end()
        if at_eof or len(buf) > MAX_HEADER_BYTES:
            self._explain_no_events(buf, start, at_eof)
        return None

    @staticmethod
    def _explain_no_events(buf: bytes, start: int, at_eof: bool) -> None:
        if not at_eof:
            raise StreamError("no traceEvents array in the first 64 MB: not a profiler trace")
        try:
            msgspec.json.decode(buf[start:])
        except msgspec.DecodeError:
            raise StreamError("not valid JSON, and no traceEvents array found") from None
        raise NotATrace("JSON without a traceEvents array: not a profiler trace")

    # -- the middle -----------------------------------------------------------------------

    def _last_cut(self, buf: bytes, pos: int) -> tuple[Batch, int] | None:
        """Decode buf[pos:] up to its last event boundary; return the batch and the next start."""
        hi = len(buf)
        for _ in range(MAX_CUT_RETRIES):
            close = _rfind_boundary(buf, pos, hi)
            if close is None:
                return None
            try:
                # One copy: join reads the memoryview in place.
                batch = self._decode(b"".join((b"[", memoryview(buf)[pos : close + 1], b"]")))
            except msgspec.DecodeError:
                hi = close  # a false boundary inside a string, or a broken event: go left
                continue
            nxt = _BOUNDARY.match(buf, close)
            assert nxt is not None
            return batch, nxt.end() - 1
        raise StreamError(f"invalid JSON in the events near byte {self._offset + pos:,}")

    def _decode(self, doc: bytes) -> Batch:
        try:
            batch = Batch.of(EVENTS.decode(doc))
        except msgspec.ValidationError:
            return self._decode_leniently(msgspec.json.decode(doc))
        if needs_precision(batch.complete):
            return Batch.of(PRECISE_EVENTS.decode(doc), precise=True)
        return batch

    def _decode_leniently(self, raw_events: list[Any]) -> Batch:
        """A field had an unexpected type: decode event by event, dropping unreadable ones."""
        events = []
        for raw in raw_events:
            text = msgspec.json.encode(raw)
            try:
                events.append(STRICT_EVENT.decode(text))
                continue
            except msgspec.ValidationError:
                pass
            try:
                events.append(LENIENT_EVENT.decode(text))
                self.result.retyped_events += 1
            except msgspec.ValidationError:
                known = isinstance(raw, dict) and raw.get("ph") in KNOWN_PHASES
                if known or not isinstance(raw, dict) or "ph" not in raw:
                    self.result.dropped_events += 1
                # else: a phase outside the Chrome trace format, which nothing here reads
        return Batch.of(events)

    # -- the end --------------------------------------------------------------------------

    def _finish(self, buf: bytes, pos: int) -> Iterator[Batch]:
        """The last event, then the keys after the array (object form)."""
        rest = buf[pos:]
        if self.result.bare_array:
            yield from self._finish_array(rest)
            return
        for m in reversed(list(_ARRAY_END.finditer(rest))):
            try:
                events = self._decode(b"[" + rest[: m.start() + 1] + b"]")
            except msgspec.DecodeError:
                continue  # a "}]" inside the trailing keys, or the cut
            self._read_trailer(rest[m.end() :])
            yield events
            return
        body = rest.lstrip(_WHITESPACE)
        if body.startswith(b"]"):  # an empty event array
            self._read_trailer(body[1:])
        else:
            self.result.truncated = True
            self.result.lost_bytes = len(rest)  # the last event itself is incomplete

    def _finish_array(self, rest: bytes) -> Iterator[Batch]:
        # The Chrome trace format lets the array form omit its closing bracket.
        body = rest.rstrip(_WHITESPACE)
        body = body[:-1] if body.endswith(b"]") else body.rstrip(b",")
        try:
            yield self._decode(b"[" + body + b"]")
            return
        except msgspec.DecodeError:
            pass
        for m in reversed(list(_BOUNDARY.finditer(rest))):
            try:
                events = self._decode(b"[" + rest[: m.start() + 1] + b"]")
            except msgspec.DecodeError:
                continue
            yield events
            break
        else:
            m = None
        self.result.truncated = True
        self.result.lost_bytes = len(rest) - (m.start() + 1 if m else 0)

    def _read_trailer(self, trailer: bytes) -> None:
        """The keys after the events: `, "traceName": "..." }` in a whole file."""
        try:
            meta = msgspec.json.decode(b'{"traceEvents":[]' + trailer)
        except msgspec.DecodeError:
            if trailer.strip(_WHITESPACE):
                self.result.truncated = self.result.lost_trailer = True
                self.result.lost_bytes = len(trailer)
            return
        if isinstance(meta, dict):
            meta.pop("traceEvents", None)
            self.result.metadata.update(meta)


def _rfind_boundary(buf: bytes, lo: int, hi: int) -> int | None:
    """Index of the `}` of the last `}` `,` `{` in buf[lo:hi], or None."""
    while True:
        close = buf.rfind(b"}", lo, hi)
        if close < 0:
            return None
        if _BOUNDARY.match(buf, close):
            return close
        hi = close
