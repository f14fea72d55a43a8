"""How each value a trace writes in its own way becomes a column value: ids and counts however
written, texts with or without their quotes, lists' lengths, raw JSON kept as text. Both paths of
the parser read values through these, so they read them alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from traceview.parse.args import Reading

_INT64_SPAN = 1 << 64
INT64_MAX = (1 << 63) - 1


def _wrap(value: int) -> int:
    """Into int64, keeping identity: ids above 2^63 (written as uint64) wrap to negatives."""
    if -INT64_MAX - 1 <= value <= INT64_MAX:
        return value
    return (value + (1 << 63)) % _INT64_SPAN - (1 << 63)


def whole(value: object) -> int | None:
    """An integer however a trace wrote it: 7, 7.0, "7", "0x7" (ROCm streams), "\"7\"", or
    "stream 7" / "25738" in old traces' pid/tid; Kineto's own rows ("Spans") have none."""
    if value is None or value.__class__ is bool:
        return None
    if value.__class__ is int:
        return _wrap(value)  # type: ignore[arg-type]
    if isinstance(value, float):
        return _wrap(int(value)) if value.is_integer() else None
    text = str(value).strip().strip('"').strip()
    try:
        if text.lower().startswith(("0x", "-0x")):
            return _wrap(int(text, 16))
        return _wrap(int(text))
    except ValueError:
        pass
    try:
        number = float(text)
        return _wrap(int(number)) if number.is_integer() else None
    except (ValueError, OverflowError):
        pass
    digits = "".join(ch for ch in text if ch.isdigit())
    return _wrap(int(digits)) if digits else None


def text(value: object) -> str | None:
    """A string arg however a trace wrote it: "0", "\"0\"" (quotes kept) or 0 (a number)."""
    if value is None:
        return None
    if value.__class__ is str:
        s: str = value  # type: ignore[assignment]
        return s[1:-1] if len(s) >= 2 and s[0] == s[-1] == '"' else s
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def list_length(raw: msgspec.Raw) -> int | None:
    """Length of a JSON list, or of a list written as a string ("[0, 1, 2]")."""
    if not raw:
        return None
    try:
        value = msgspec.json.decode(raw)
        if isinstance(value, str):
            value = msgspec.json.decode(value.encode())
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    return len(value) if isinstance(value, list) else None


def raw_text(raw: msgspec.Raw) -> str | None:
    """Raw JSON kept by the decoder, so not checked as UTF-8 yet: replaced where it is not."""
    return bytes(raw).decode(errors="replace") or None


def raw_texts(values: list[Any]) -> list[str | None]:
    """raw_text of each (None or NO_RAW where absent), all at once: joined by NUL, which JSON
    text never holds raw, decoded once and split again (a call each costs more than the text)."""
    if not values:
        return []
    pieces = [b"" if v is None else v for v in values]
    return [t or None for t in b"\x00".join(pieces).decode(errors="replace").split("\x00")]


# How each reading of parse/args.py turns one decoded value into a column value.
READERS: dict[Reading, Callable[[object], object]] = {
    "id": whole,
    "count": whole,
    "text": text,
    "list_length": list_length,  # type: ignore[dict-item]
    "raw": raw_text,  # type: ignore[dict-item]
}
