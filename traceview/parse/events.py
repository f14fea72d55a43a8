"""Typed decoding of trace events: only the fields the analyses use are decoded.

msgspec skips every other key without building Python objects for it, which is most of the
speed of the parser. `gc=False` because millions of these short-lived structs would otherwise
keep the cycle collector busy.
"""

from __future__ import annotations

from decimal import Decimal

import msgspec

Number = int | float


class Args(msgspec.Struct, gc=False):
    correlation: Number | None = None
    external_id: Number | None = msgspec.field(default=None, name="External id")
    external_id_old: Number | None = msgspec.field(default=None, name="external id")
    device: Number | None = None
    stream: Number | None = None
    # Collective arguments (record_param_comms ops, and NCCL kernels in newer traces).
    collective_name: str | None = msgspec.field(default=None, name="Collective name")
    in_nelems: Number | None = msgspec.field(default=None, name="In msg nelems")
    out_nelems: Number | None = msgspec.field(default=None, name="Out msg nelems")
    dtype: str | None = None
    pg_name: str | None = msgspec.field(default=None, name="Process Group Name")
    pg_desc: str | None = msgspec.field(default=None, name="Process Group Description")
    pg_ranks: str | None = msgspec.field(default=None, name="Process Group Ranks")
    group_size: Number | None = msgspec.field(default=None, name="Group size")
    seq: Number | None = msgspec.field(default=None, name="Seq")
    # Shapes, kept undecoded: only collective ops need them, and they are large.
    input_dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input Dims")
    input_type: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input type")
    # Metadata events ("ph": "M") carry thread and process names here.
    name: str | None = None


class Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str | None = None
    tid: int | str | None = None
    ts: Number | None = None
    dur: Number | None = None
    args: Args | None = None


class PreciseEvent(Event, gc=False):
    """Timestamps kept as decimals: epoch microseconds with fractions exceed float64's precision."""

    ts: Decimal | None = None  # type: ignore[assignment]  # a narrower use of the same field


EVENT_LIST = msgspec.json.Decoder(list[Event])
PRECISE_EVENT_LIST = msgspec.json.Decoder(list[PreciseEvent])
# Below this many microseconds a float64 timestamp still resolves nanoseconds exactly.
FLOAT_EXACT_US = 2**53 / 1000 / 2


def needs_precision(batch: list[Event]) -> bool:
    """True when the batch has epoch-sized timestamps with fractions (float64 would blur them)."""
    for e in batch:
        if e.ts is not None:
            if e.ts < FLOAT_EXACT_US:
                return False  # one clock per trace: the first timestamp decides
            break
    return any(e.ts is not None and e.ts % 1 for e in batch)


LENIENT_EVENT = msgspec.json.Decoder(Event, strict=False)  # "7" -> 7 and the like
