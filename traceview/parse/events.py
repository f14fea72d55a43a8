"""Typed decoding of trace events: only the fields the analyses use are decoded.

msgspec skips every other key without building Python objects for it, which is most of the
speed of the parser; events are told apart by their phase ("ph") as they are decoded.
`gc=False` because millions of these short-lived structs would otherwise keep the cycle
collector busy.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Union

import msgspec

from traceview.parse.args import Args, Loose


class CompleteEvent(msgspec.Struct, gc=False, tag_field="ph", tag="X"):
    """A span: CPU op, annotation, runtime call, kernel, memcpy..."""

    cat: str = ""
    name: str = ""
    pid: int | str | None = None
    tid: int | str | None = None
    ts: Loose | None = None
    dur: Loose | None = None
    args: Args | None = None  # type: ignore[valid-type]  # made from parse/args.py's table


class PreciseCompleteEvent(CompleteEvent, tag="X"):
    """Timestamps kept as decimals: epoch microseconds with fractions exceed float64's precision."""

    ts: Decimal | None = None  # type: ignore[assignment]  # a narrower use of the same field


class MetadataEvent(msgspec.Struct, gc=False, tag_field="ph", tag="M"):
    """Process and thread names."""

    name: str = ""
    pid: int | str | None = None
    tid: int | str | None = None
    args: Args | None = None  # type: ignore[valid-type]  # made from parse/args.py's table


# Every other phase of the Chrome trace format (flows, instants, counters, async, ...) is
# recognised by its "ph" and nothing else is read: a flow event costs almost nothing.
_OTHER_PHASES = "BEiIbneSTpFstfCPONDVvRc()"
_OTHERS = tuple(
    msgspec.defstruct(f"Phase{ord(ph)}", [], gc=False, tag_field="ph", tag=ph)
    for ph in _OTHER_PHASES
)
KNOWN_PHASES = frozenset("XM" + _OTHER_PHASES)


THREAD_NAME = "thread_name"  # the only metadata events read: threads' names


class DecodedBatch(msgspec.Struct, frozen=True):
    complete: list[CompleteEvent]
    metadata: list[MetadataEvent]  # the thread names (a tiled or long trace may hold 100,000s)

    @classmethod
    def of(cls, events: list[Any], *, precise: bool = False) -> DecodedBatch:
        complete = PreciseCompleteEvent if precise else CompleteEvent
        return cls(
            [e for e in events if e.__class__ is complete],
            [e for e in events if e.__class__ is MetadataEvent and e.name == THREAD_NAME],
        )


AnyEvent: Any = Union[(CompleteEvent, MetadataEvent, *_OTHERS)]
PreciseEvent: Any = Union[(PreciseCompleteEvent, MetadataEvent, *_OTHERS)]
EVENTS = msgspec.json.Decoder(list[AnyEvent])
PRECISE_EVENTS = msgspec.json.Decoder(list[PreciseEvent])
STRICT_EVENT = msgspec.json.Decoder(AnyEvent)
LENIENT_EVENT = msgspec.json.Decoder(AnyEvent, strict=False)  # 7.0 -> 7 and the like
STRICT_PRECISE_EVENT = msgspec.json.Decoder(PreciseEvent)
LENIENT_PRECISE_EVENT = msgspec.json.Decoder(PreciseEvent, strict=False)
# Below this many microseconds a float64 timestamp still resolves nanoseconds exactly.
FLOAT_EXACT_US = 2**53 / 1000 / 2
FLOAT_EXACT_NS = 2**52  # the same bound in nanoseconds, for the compiled scanner's integers


def needs_precision(complete: list[CompleteEvent]) -> bool:
    """True when the batch has epoch-sized timestamps with fractions (float64 would blur them)."""
    for e in complete:
        if e.ts is not None:
            if e.ts.__class__ is str or e.ts < FLOAT_EXACT_US:  # type: ignore[operator]
                return False  # one clock per trace: the first timestamp decides
            break
    return any(e.ts is not None and e.ts.__class__ is not str and e.ts % 1 for e in complete)  # type: ignore[operator]
