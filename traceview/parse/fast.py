"""The compiled fast path of the parser (parse/_scan.c), where it was built.

The scanner turns the plain events of a buffer straight into int64 columns; this module turns
its answer into a ScannedBatch, decoding the few things it leaves behind (metadata events, ids
written as strings, and each distinct value of the args of communication events, once) with the
same structs and readers as the pure-Python path. A batch the scanner calls odd is not a
ScannedBatch: the caller decodes it the pure-Python way. Set TRACEVIEW_PURE_PYTHON=1 to use
the pure-Python path everywhere.
"""

from __future__ import annotations

import functools
import os
from types import ModuleType
from typing import Any

import msgspec
import numpy as np
import polars as pl

from traceview.parse.args import (
    COLLECTIVE_ARGS,
    KEPT_ARGS,
    LAUNCH_ARGS,
    LAUNCH_SCHEMA,
    NO_RAW,
    TRACE_ARGS,
    TraceArg,
    column_type,
    value_type,
)
from traceview.parse.categories import CATEGORY, folded
from traceview.parse.events import (
    EVENTS,
    FLOAT_EXACT_NS,
    KNOWN_PHASES,
    THREAD_NAME,
    MetadataEvent,
)
from traceview.parse.names import KEEPS_ARGS
from traceview.parse.readers import READERS

_scan: ModuleType | None
try:
    from traceview.parse import _scan
except ImportError:  # not built here: the pure-Python path does all the work
    _scan = None

PURE_PYTHON_ENV = "TRACEVIEW_PURE_PYTHON"
NONE = -(1 << 63)  # the scanner's missing value
# What this side reads from the scanner's columns, by name; their order is the scanner's own
# (named once, in parse/_scan.c). The values of each event come first, then where its args lie.
VALUES = {"ts_ns", "dur_ns", "name", "cat", "pid", "tid", "correlation", "device", "stream"}
WHERE_ARGS = ("args_at", "args_end")
_ORDER: tuple[str, ...] = (*sorted(VALUES), *WHERE_ARGS)  # read only where the scanner is built
if _scan is not None:
    if set(_scan.COLUMNS) != {*VALUES, *WHERE_ARGS} or _scan.COLUMNS[-2:] != WHERE_ARGS:
        raise ImportError(
            f"traceview's compiled scanner is out of date (columns {_scan.COLUMNS}): "
            "rebuild it with 'pip install -e .'"
        )
    _ORDER = _scan.COLUMNS
COLUMNS = _ORDER[:-2]  # the events' values, in the scanner's order
ARGS_AT = len(COLUMNS)  # where an event's args begin (the args' end follows it)
NAME = COLUMNS.index("name")


Readable = bytes | bytearray | memoryview  # what the scanner reads


def available() -> bool:
    """True where the compiled scanner was built and is not switched off."""
    return _scan is not None and os.environ.get(PURE_PYTHON_ENV, "") in ("", "0")


class UnreadablePage(Exception):
    """A page of a memory-mapped file could not be read: the file was cut short while it was
    read, or the device failed."""


def copy(view: memoryview) -> bytes:
    """The bytes of a view of a mapped file, read so that a page that cannot be read raises
    UnreadablePage rather than ending the process."""
    assert _scan is not None
    out = _scan.copy(view)
    if out is None:
        raise UnreadablePage
    return out


class ScannedBatch(msgspec.Struct, frozen=True):
    """Complete events as columns (rows in trace order) plus what was decoded beside them."""

    columns: np.ndarray  # (len(COLUMNS) + 2, rows) int64; NONE where missing
    names: pl.Series  # Categorical: the trace's distinct names so far, by the scanner's ids
    categories: pl.Series  # the same for categories, folded onto CATEGORY
    metadata: list[MetadataEvent]
    comm_rows: np.ndarray  # rows in the batch of the communication events ...
    comm_positions: np.ndarray  # ... and where their args' values are (KeptValues.positions)
    launch_positions: np.ndarray  # by row, where its launch shape's values are (the same way)
    kept: KeptValues  # those values, the scanner's so far
    odd_ids: dict[str, list[tuple[int, object]]]  # column -> (row in batch, decoded value)

    @property
    def rows(self) -> int:
        return int(self.columns.shape[1])


class Scanned(msgspec.Struct, frozen=True):
    """The scanner's answer for one buffer. `batch` None: no cut (more bytes needed) or odd."""

    batch: ScannedBatch | None
    odd: bool
    next: int  # where the next event starts, after a batch
    precise: bool  # the trace's timestamps are epoch microseconds with fractions
    ended: bool  # the array's `]` follows the batch (at next): the caller reads the rest


@functools.cache
def _scanner_setup() -> tuple[bytes, list[tuple[bytes, int, int, int]]]:
    """What every Scanner is made with: the known phases, and how it checks each declared arg
    (the three ids it reads, values the decoder types int | float | str | null, raw JSON, and
    text or null; a kept arg's values are kept, in its slot: its place in KEPT_ARGS; a launch
    shape's for every event, a collective arg's for the events whose name is flagged). Built
    once: a small trace's reading paid a tenth of a millisecond for it."""
    assert _scan is not None
    ids = {
        "correlation": _scan.ARG_CORRELATION,
        "device": _scan.ARG_DEVICE,
        "stream": _scan.ARG_STREAM,
    }
    loose, raw, text = _scan.ARG_LOOSE, _scan.ARG_RAW, _scan.ARG_TEXT_OR_NULL
    by_reading = {"id": loose, "count": loose, "text": loose, "list_length": raw, "raw": raw}
    keys = [
        (
            a.key.encode(),
            ids.get(a.column, by_reading.get(a.reading, text)),
            KEPT_ARGS.index(a) if a in KEPT_ARGS else -1,
            int(a in LAUNCH_ARGS),
        )
        for a in TRACE_ARGS
    ]
    return "".join(sorted(KNOWN_PHASES)).encode(), keys


# Series are immutable: a trace's tables of distinct strings start from these and grow by concat.
_NO_NAMES = pl.Series(dtype=pl.Categorical)
_NO_CATEGORIES = pl.Series(dtype=CATEGORY)


def _folded(categories: tuple[str, ...]) -> pl.Series:
    """A trace's categories as written, in the order first met, folded onto CATEGORY. Most
    traces of a job meet the same few in the same order: folded once for them all (a few
    short names kept; any others, folded each time, are not held)."""
    if len(categories) <= _FOLDS_KEPT_UP_TO and sum(map(len, categories)) <= 1024:
        return _kept_fold(categories)
    return folded(categories)


_FOLDS_KEPT_UP_TO = 32
_kept_fold = functools.lru_cache(maxsize=64)(folded)


class Scanner:
    """One trace's scanner: its tables of distinct names and categories span all its batches."""

    def __init__(self) -> None:
        assert _scan is not None
        self._scanner = _scan.Scanner(*_scanner_setup())
        self._categories: list[str] = []
        self._keeps = np.zeros(0, dtype=bool)  # by name id: its events keep their args
        self._name_series = _NO_NAMES
        self._category_series = _NO_CATEGORIES  # folded once, as they are learnt
        self._kept = KeptValues()

    def scan(self, buf: Readable, pos: int, precise: bool) -> Scanned:
        assert _scan is not None
        found = self._scanner.scan(buf, pos)
        self._learn(found.new_names, found.new_categories)
        self._kept.learn(found.new_kept)
        if found.status == _scan.FAULT:
            raise UnreadablePage
        odd = Scanned(None, True, pos, precise, False)
        if found.status == _scan.ODD:
            return odd
        if found.status == _scan.NEED_MORE:
            return Scanned(None, False, pos, precise, found.ended)
        # The pure-Python path's rule (parse/events.py needs_precision), from the scanner's counts.
        first_ts = found.first_ts
        precise = precise or (
            first_ts is not None and first_ts >= FLOAT_EXACT_NS and found.any_fraction
        )
        if (found.big_fraction_ts and not precise) or found.big_fraction_dur:
            return odd  # float64 would blur these as that path reads them: leave them to it
        if found.rounded and precise:
            return odd  # read as float64 reads them, where that path reads decimals
        table = np.frombuffer(found.columns, dtype=np.int64)
        table = table.reshape(len(COLUMNS) + 2, len(table) // (len(COLUMNS) + 2))
        try:  # what the scanner leaves to the decoder; its refusal makes the batch odd
            meta = _decoded(EVENTS, _owned(buf, _pairs(found.metadata)))
            ids = self._odd_ids(buf, found.odd_ids)
        except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            return odd
        rows = np.flatnonzero(self._keeps[table[NAME]] & (table[ARGS_AT] != NONE))
        positions = self._kept.positions(rows, found.kept_args)
        if positions is None:
            return odd  # a value the decoder refuses: the pure-Python path decides
        batch = ScannedBatch(
            columns=table,
            names=self._name_series,
            categories=self._category_series,
            metadata=[m for m in meta if m.__class__ is MetadataEvent and m.name == THREAD_NAME],
            comm_rows=rows,
            comm_positions=positions,
            launch_positions=self._kept.launch_positions(table.shape[1], found.kept_args),
            kept=self._kept,
            odd_ids=ids,
        )
        return Scanned(batch, False, found.next, precise, found.ended)

    def _learn(self, names: list[str], categories: list[str]) -> None:
        if names:  # appended, not rebuilt: a trace of many steps learns a name per step
            keeps = [KEEPS_ARGS.match(n) is not None for n in names]
            self._keeps = np.concatenate([self._keeps, np.array(keeps, dtype=bool)])
            self._scanner.keep_args(self._keeps.tobytes())
            self._name_series = pl.concat(
                [self._name_series, pl.Series(names, dtype=pl.Categorical)], rechunk=False
            )
        if categories:
            self._categories += categories
            self._category_series = _folded(tuple(self._categories))

    @staticmethod
    def _odd_ids(buf: Readable, odd: bytes) -> dict[str, list[tuple[int, object]]]:
        out: dict[str, list[tuple[int, object]]] = {}
        quads = np.frombuffer(odd, dtype=np.int64).reshape(-1, 4).tolist()
        pieces = _owned(buf, [(at, end) for _, _, at, end in quads])
        for (row, column, _, _), piece in zip(quads, pieces, strict=True):
            out.setdefault(COLUMNS[column], []).append((row, msgspec.json.decode(piece)))
        return out


def _owned(buf: Readable, spans: list[tuple[int, int]]) -> list[Readable]:
    """Pieces of a batch, from a mapped file copied: what is decoded from them (raw JSON values)
    may keep a view, and the file's pages must not be held, or read again once let go. One
    guarded read of the stretch they span, not one per piece (a read is guarded against a page
    that cannot be read, which costs microseconds each: a Gloo trace has a piece per event)."""
    if not spans or not isinstance(buf, memoryview):
        return [buf[a:b] for a, b in spans]
    lo = min(a for a, _ in spans)
    stretch = copy(buf[lo : max(b for _, b in spans)])
    return [stretch[a - lo : b - lo] for a, b in spans]


def _decoded(decoder: msgspec.json.Decoder, pieces: list[Readable]) -> list[Any]:
    """Each piece (one JSON value) decoded, all in one call: as one array (a call per piece
    costs more than the decoding, at a Gloo call's arguments per few events)."""
    return decoder.decode(b"[" + b",".join(pieces) + b"]") if pieces else []


def _pairs(flat: bytes) -> list[tuple[int, int]]:
    return [tuple(p) for p in np.frombuffer(flat, dtype=np.int64).reshape(-1, 2).tolist()]  # type: ignore[misc]


def _kept_type(arg: TraceArg) -> pl.DataType:
    """The type of a kept arg's values: a launch shape's is a category (few texts, many rows)."""
    return LAUNCH_SCHEMA.get(arg.column) or column_type(arg)


# Value id i at i + 1: position 0 holds the null an event without the arg takes. Made once (a
# decoder is safe to share between threads; a Series is immutable).
_NULL_VALUES = tuple(pl.Series(a.column, [None], _kept_type(a)) for a in KEPT_ARGS)
_DECODERS = tuple(msgspec.json.Decoder(list[value_type(a)]) for a in KEPT_ARGS)  # type: ignore[misc]
_COLLECTIVE_SLOTS = len(COLLECTIVE_ARGS)  # KEPT_ARGS' first slots; the launch shape's follow


class KeptValues:
    """Each kept arg's distinct value texts, as the scanner first meets them, decoded once each
    with the pure-Python path's types and readers; a batch's args are ids into them."""

    def __init__(self) -> None:
        self._values = list(_NULL_VALUES)
        self._decoders = _DECODERS
        self._refused: list[set[int]] = [set() for _ in KEPT_ARGS]  # ids the decoder refused

    def learn(self, new: tuple[list[str], ...]) -> None:
        for slot, texts in enumerate(new):
            if texts:
                values = self._decoded(slot, texts)
                learnt = pl.Series(self._values[slot].name, values, self._values[slot].dtype)
                self._values[slot] = pl.concat([self._values[slot], learnt], rechunk=False)

    def _decoded(self, slot: int, texts: list[str]) -> list[object]:
        read = READERS[KEPT_ARGS[slot].reading]
        decoder = self._decoders[slot]
        try:
            decoded = decoder.decode(f"[{','.join(texts)}]".encode())
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
            decoded = []  # one at a time, to know which
            first = self._values[slot].len() - 1
            for i, t in enumerate(texts):
                try:
                    decoded += decoder.decode(f"[{t}]".encode())
                except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
                    decoded.append(None)
                    self._refused[slot].add(first + i)
        return [None if v is None or v is NO_RAW else read(v) for v in decoded]

    def positions(self, rows: np.ndarray, kept: bytes) -> np.ndarray | None:
        """By slot, where each of a batch's communication events (`rows`) finds its value of
        that arg (0: it has none), from the scanner's (row, slot, id) triples; None where one
        of them holds a value the decoder refused."""
        triples = np.frombuffer(kept, dtype=np.int64).reshape(-1, 3)
        triples = triples[triples[:, 1] < _COLLECTIVE_SLOTS]
        at = np.searchsorted(rows, triples[:, 0]) if len(rows) else np.zeros(0, dtype=np.int64)
        mine = at < len(rows)
        mine[mine] = rows[at[mine]] == triples[mine, 0]  # others: events that are no calls
        triples, at = triples[mine], at[mine]
        for slot, refused in enumerate(self._refused[:_COLLECTIVE_SLOTS]):
            if refused and np.isin(triples[triples[:, 1] == slot, 2], list(refused)).any():
                return None
        out = np.zeros((len(COLLECTIVE_ARGS), len(rows)), dtype=np.int64)
        out[triples[:, 1], at] = triples[:, 2] + 1
        return out

    def launch_positions(self, rows: int, kept: bytes) -> np.ndarray:
        """By launch arg, where each of a batch's `rows` events finds its value (0: none), from
        the scanner's (row, slot, id) triples. (A raw value is never refused: the scanner
        checked it is JSON.)"""
        triples = np.frombuffer(kept, dtype=np.int64).reshape(-1, 3)
        triples = triples[triples[:, 1] >= _COLLECTIVE_SLOTS]
        out = np.zeros((len(LAUNCH_ARGS), rows), dtype=np.int32)
        out[triples[:, 1] - _COLLECTIVE_SLOTS, triples[:, 0]] = triples[:, 2] + 1
        return out

    def launch_columns(self, positions: np.ndarray) -> list[pl.Series]:
        """The launch shape's columns of events, from their positions (launch_positions)."""
        return [
            self._values[_COLLECTIVE_SLOTS + i].gather(positions[i]).alias(arg.column)
            for i, arg in enumerate(LAUNCH_ARGS)
        ]

    def frame(self, rows: np.ndarray, positions: np.ndarray) -> pl.DataFrame:
        """The args of communication events (`rows`, in the parse's numbering) as columns, from
        their positions: several batches' together, in one query (a call into polars costs
        what gathering thousands of values does)."""
        at = pl.DataFrame({f"_{slot}": positions[slot] for slot in range(len(COLLECTIVE_ARGS))})
        columns: dict[str, pl.Expr] = {"row": pl.lit(pl.Series("row", rows, pl.Int64))}
        for slot, arg in enumerate(COLLECTIVE_ARGS):
            values = pl.lit(self._values[slot]).gather(pl.col(f"_{slot}"))
            if arg.fills is None:
                columns[arg.column] = values
            else:  # read only where the column it fills is missing
                columns[arg.fills] = columns[arg.fills].fill_null(values)
        return at.select(**columns)  # in COMM_ARGS_SCHEMA's order and types, as made
