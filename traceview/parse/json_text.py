"""The JSON text of a trace's event array, searched without decoding it: where its events begin
and end, whether a `}` `,` `{` lies inside a string, what msgspec said went wrong and where."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import msgspec

Bytes = bytes | bytearray

ARRAY_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
BOUNDARY = re.compile(rb"\}\s*,\s*\{")
ARRAY_END = re.compile(rb"\}\s*\]")
ANY_ARRAY_END = re.compile(rb"\]")
_ESCAPED_QUOTE = re.compile(rb'\\+"')
# A whole string (escapes included), a bracket or a comma: what splits an array's values.
_STRUCTURE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]', re.S)
BYTE_AT = re.compile(r"\(byte (\d+)\)")
# msgspec's words for a value that ends before its text does: the `[` put before a stretch of
# events closed at a `]` inside it, the end of the events' array.
CLOSED_EARLY = "trailing characters"
WHITESPACE = b" \t\r\n"
_NON_BLANK = re.compile(rb"[^ \t\r\n\xef\xbb\xbf]")
MAX_CUT_RETRIES = 64  # boundaries tried, latest first, before a stretch is called invalid


def decode_json(data: Bytes) -> Any:
    return msgspec.json.decode(data)


def utf8_replaced(data: Bytes) -> bytes:
    """`data` with the bytes that are not UTF-8 replaced (U+FFFD), as JSON text must be."""
    return bytes(data).decode("utf-8", errors="replace").encode()


def document_before(text: Bytes, place: int) -> tuple[Any, int] | None:
    """The JSON document that `text` holds before the bytes msgspec called trailing at `place`
    (it names the byte after the first of them, or that byte), and where it ends; None if no
    document ends there."""
    for end in (place - 1, place):
        try:
            return decode_json(text[:end]), end
        except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
            continue
    return None


def reason(error: msgspec.DecodeError) -> str:
    text = str(error).removeprefix("JSON is malformed: ")
    return BYTE_AT.sub("", text).strip()


def first_non_blank(buf: Bytes) -> int:
    m = _NON_BLANK.search(buf)
    return len(buf) if m is None else m.start()


def last_matches(pattern: re.Pattern[bytes], data: Bytes) -> list[re.Match[bytes]]:
    """The last matches of `pattern`, latest first: at most MAX_CUT_RETRIES of them."""
    found: list[re.Match[bytes]] = []
    for m in pattern.finditer(data):
        found.append(m)
        if len(found) > MAX_CUT_RETRIES:
            found.pop(0)
    return found[::-1]


def _quotes(buf: Bytes, lo: int, hi: int) -> int:
    """Unescaped quotes in buf[lo:hi] (a quote after an odd run of backslashes is escaped)."""
    quotes = buf.count(b'"', lo, hi)
    if quotes and buf.find(b"\\", max(lo - 64, 0), hi) >= 0:
        for m in _ESCAPED_QUOTE.finditer(buf, max(lo - 64, 0), hi):
            if lo <= m.end() - 1 < hi and (len(m[0]) - 1) % 2:
                quotes -= 1
    return quotes


def rfind_boundary(buf: Bytes, lo: int, hi: int, start: int) -> int | None:
    """Index of the `}` of the last `}` `,` `{` in buf[lo:hi] outside every string (events
    begin at `start`, outside any), or None. Quote parity is kept while walking left, so each
    byte is counted once."""
    before = _quotes(buf, start, hi)  # unescaped quotes in buf[start:hi]
    while True:
        close = buf.rfind(b"}", lo, hi)
        if close < 0:
            return None
        before -= _quotes(buf, close, hi)
        if before % 2 == 0 and BOUNDARY.match(buf, close):
            return close
        hi = close


def event_texts(doc: bytes, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """The values of the array whose items are doc[start:end], each with its offset in `doc`:
    split at the commas outside every string and bracket, in one pass (a value nested too deep
    for the decoder, or broken, is one piece all the same)."""
    depth = 0
    begin = start  # where the current value's text begins
    for m in _STRUCTURE.finditer(doc, start, end):
        c = doc[m.start()]
        if c == 0x22:  # a whole string: nothing in it counts
            continue
        if c in b"[{":
            depth += 1
        elif c in b"]}":
            depth -= 1
        elif depth == 0:  # a comma between values
            yield from _piece(doc, begin, m.start())
            begin = m.end()
    yield from _piece(doc, begin, end)


def _piece(doc: bytes, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    text = doc[start:end]
    stripped = text.lstrip(WHITESPACE)
    if stripped.rstrip(WHITESPACE):
        yield start + len(text) - len(stripped), stripped.rstrip(WHITESPACE)


def unclosed(text: Bytes) -> int | None:
    """Where `text` stops being one value's brackets, whole (None where it is one): it must
    open with `{` or `[` and end with the bracket that closes that one (outside its strings).
    What a value nested too deep for the decoder is checked by: whole, or cut, broken or
    followed by more."""
    start = len(text) - len(text.lstrip(WHITESPACE))
    end = len(text.rstrip(WHITESPACE))
    if text[start : start + 1] not in (b"{", b"["):
        return start
    depth = 0
    for m in _STRUCTURE.finditer(text, start, end):
        c = text[m.start()]
        if c in b"[{":
            depth += 1
        elif c in b"]}":
            depth -= 1
            if depth == 0:  # its end: all that may follow is blank
                after = m.end()
                return None if after == end else after + first_non_blank(text[after:end])
    return end


def first_unreadable(text: Bytes) -> int | None:
    """Where, in a stretch of events (a comma-separated run of values, up to the array's end
    or the text's), the first value that is not JSON begins; None where each is JSON (or nested
    too deep to tell otherwise, whole) up to where the text runs out."""
    depth, begin = 0, 0
    for m in _STRUCTURE.finditer(text):
        c = text[m.start()]
        if c in b"[{":
            depth += 1
        elif c in b"]}":
            depth -= 1
            if depth < 0:  # the array's end, if a `]`
                before = _unreadable_at(text, begin, m.start())
                return m.start() if before is None and c != 0x5D else before
        elif c == 0x2C and depth == 0:  # a comma between values
            at = _unreadable_at(text, begin, m.start())
            if at is not None:
                return at
            begin = m.end()
    return None  # the text ran out inside (or after) a value: a cut, not a break


def _unreadable_at(text: Bytes, start: int, end: int) -> int | None:
    piece = text[start:end]
    stripped = piece.strip(WHITESPACE)
    if not stripped:
        return None
    try:
        decode_json(stripped)
    except RecursionError:  # nested too deep: a dropped event, if whole
        where = unclosed(piece)
        return None if where is None else start + where
    except (msgspec.DecodeError, UnicodeDecodeError):
        return start + len(piece) - len(piece.lstrip(WHITESPACE))
    return None
