"""Typed decoding of trace events: only the fields the analyses use are decoded.

msgspec skips every other key without building Python objects for it, which is most of the
speed of the parser. `gc=False` because millions of these short-lived structs would otherwise
keep the cycle collector busy.
"""

from __future__ import annotations

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


EVENT_LIST = msgspec.json.Decoder(list[Event])
LENIENT_EVENT = msgspec.json.Decoder(Event, strict=False)  # "7" -> 7 and the like
