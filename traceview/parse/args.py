"""The trace args traceview reads, declared once: the key each trace vintage writes, the
column it becomes, how its value is read, and which traces carry it. The decoder
(parse/events.py) and the column builder (parse/columns.py) are both made from this table;
every other arg is skipped without being decoded."""

from __future__ import annotations

from typing import Literal

import msgspec
import polars as pl

# Kineto versions disagree on how they write some values: ids as hex strings ("0x0", ROCm),
# times as strings ("12.345"), string args as numbers or with their quotes kept ("\"0\"").
# Such fields take any of the three; parse/columns.py reads each one the same way.
Loose = int | float | str

# How a value is read: an id or a count (an integer however written), a text, the length of a
# list (or of a list written as a string), raw JSON kept as text (large shapes, decoded only
# for the few ops that need them), or a name (metadata events' thread and process names).
Reading = Literal["id", "count", "text", "list_length", "raw", "name"]
# Which events' args: every complete event ("event"), the communication ops and kernels only
# ("collective"), every event that carries them ("launch": a kernel's launch shape, kept as
# text, the same few values for thousands of kernels), or metadata events ("metadata").
Scope = Literal["event", "collective", "launch", "metadata"]


class TraceArg(msgspec.Struct, frozen=True):
    column: str  # the decoded field and the column it becomes
    key: str  # as traces write it
    reading: Reading
    scope: Scope
    since: str  # which traces carry it
    fills: str | None = None  # read only where this other column is missing


TRACE_ARGS = (
    TraceArg("correlation", "correlation", "id", "event", "all: links a kernel to its launch"),
    TraceArg("device", "device", "id", "event", "all GPU events"),
    TraceArg("stream", "stream", "id", "event", "all GPU events (hex strings on ROCm)"),
    TraceArg("collective_name", "Collective name", "text", "collective", "2023+ traces"),
    TraceArg("in_nelems", "In msg nelems", "count", "collective", "2023+ traces"),
    TraceArg("out_nelems", "Out msg nelems", "count", "collective", "2023+ traces"),
    TraceArg("dtype", "dtype", "text", "collective", "2023+ traces"),
    TraceArg("pg_name", "Process Group Name", "text", "collective", "recent traces"),
    TraceArg("pg_desc", "Process Group Description", "text", "collective", "recent traces"),
    TraceArg("group_size", "Group size", "count", "collective", "recent traces"),
    TraceArg(
        "pg_ranks",
        "Process Group Ranks",
        "list_length",
        "collective",
        "recent traces (a list, or a list written as a string)",
        fills="group_size",
    ),
    TraceArg("seq", "Seq", "count", "collective", "recent traces"),
    TraceArg("input_dims", "Input Dims", "raw", "collective", "record_shapes=True, all"),
    TraceArg("input_type", "Input type", "raw", "collective", "record_shapes=True, all"),
    TraceArg("grid", "grid", "raw", "launch", "CUDA kernels, as [x, y, z]"),
    TraceArg("block", "block", "raw", "launch", "CUDA kernels, as [x, y, z]"),
    TraceArg("name", "name", "name", "metadata", "all: process and thread names"),
)

NO_RAW = msgspec.Raw(b"")  # a raw arg a trace does not carry (one object, shared)
_DECODED: dict[Reading, tuple[object, object]] = {  # reading -> (type, default)
    "id": (Loose | None, None),
    "count": (Loose | None, None),
    "text": (Loose | None, None),
    "list_length": (msgspec.Raw, NO_RAW),
    "raw": (msgspec.Raw, NO_RAW),
    "name": (str | None, None),
}
_COLUMN_TYPE: dict[Reading, pl.DataType] = {
    "id": pl.Int64(),
    "count": pl.Int64(),
    "text": pl.String(),
    "list_length": pl.Int64(),
    "raw": pl.String(),
}


def value_type(arg: TraceArg) -> object:
    """The type the decoder reads this arg's value as."""
    return _DECODED[arg.reading][0]


def column_type(arg: TraceArg) -> pl.DataType:
    """The type of the column this arg becomes."""
    return _COLUMN_TYPE[arg.reading]


EVENT_ARGS = tuple(a for a in TRACE_ARGS if a.scope == "event")
COLLECTIVE_ARGS = tuple(a for a in TRACE_ARGS if a.scope == "collective")
LAUNCH_ARGS = tuple(a for a in TRACE_ARGS if a.scope == "launch")
# The args whose values are kept (each distinct value read once), in the compiled scanner's
# slots: the collective ones, then the launch shape's.
KEPT_ARGS = (*COLLECTIVE_ARGS, *LAUNCH_ARGS)

# The decoder's struct for "args": one field per declared arg, under the key traces write.
Args = msgspec.defstruct(
    "Args",
    [
        (
            a.column,
            _DECODED[a.reading][0],
            msgspec.field(default=_DECODED[a.reading][1], name=a.key),
        )
        for a in TRACE_ARGS
    ],
    gc=False,
)

EVENT_ARGS_SCHEMA: dict[str, pl.DataType] = {a.column: _COLUMN_TYPE[a.reading] for a in EVENT_ARGS}
# A kernel's launch shape, a column of every event (null where not written): few distinct texts.
LAUNCH_SCHEMA: dict[str, pl.DataType] = {a.column: pl.Categorical() for a in LAUNCH_ARGS}
# Row -> the collective args of that row; an arg that fills another is folded into it.
COMM_ARGS_SCHEMA: dict[str, pl.DataType] = {
    "row": pl.Int64(),
    **{a.column: _COLUMN_TYPE[a.reading] for a in COLLECTIVE_ARGS if a.fills is None},
}
