"""A trace's rank, world size and backend from its head alone: Kineto writes `distributedInfo`
before the events, so a run listing can tell the parts of one world apart from separate runs
without parsing a whole (multi-GB) trace."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import msgspec

HEAD_BYTES = 1 << 20  # distributedInfo comes before traceEvents, in the first few KB
_KEY = b'"distributedInfo"'


class Peeked(msgspec.Struct, frozen=True):
    rank: int
    world_size: int
    backend: str | None


def peek(trace: Path) -> Peeked | None:
    """What the trace's head says of its rank; None where it says nothing or cannot be read."""
    try:
        with trace.open("rb") as raw:
            head = raw.read(HEAD_BYTES)
        if trace.name.endswith(".gz"):
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, HEAD_BYTES)
    except (OSError, zlib.error):
        return None
    at = head.find(_KEY)
    if at < 0:
        return None
    brace = head.find(b"{", at + len(_KEY))
    try:
        info, _ = json.JSONDecoder().raw_decode(head[brace:].decode("utf-8", "replace"))
    except ValueError:
        return None
    rank, world = info.get("rank"), info.get("world_size")
    if not isinstance(rank, int) or not isinstance(world, int) or not 0 <= rank < world:
        return None
    backend = info.get("backend")
    return Peeked(rank, world, backend if isinstance(backend, str) else None)
