"""A frame's rows as JSON objects, one a line, the bytes polars' NDJSON writer gives: written by
the compiled part (traceview/json_rows/_rows.c) where it is built and knows every column's type,
by polars' writer otherwise. polars' writer makes each row's object, struct by struct; here the
keys are laid out once, a categorical column's distinct values are encoded once, and only the
values are written: a timeline's events in 0.4-0.6x the CPU (docs/performance.md)."""

from __future__ import annotations

import io
from collections.abc import Iterator

import numpy as np
import polars as pl

try:
    from traceview.json_rows import _rows
except ImportError:  # not built: polars' writer writes every frame
    _rows = None  # type: ignore[assignment]

# The compiled part writes a number k / 1000 as its decimal, which is how polars writes the
# float nearest it only while |k| has at most 15 digits (float64 tells those decimals apart).
MILLI_LIMIT = 10**15
# Rows made into columns at a time: the columns of a block of 256 Ki rows are a few tens of MB.
BLOCK_ROWS = 1 << 18

_INTS = (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32)
_TEXTS = (pl.String, pl.Categorical, pl.Enum)
# What the compiled part takes for a column: (kind, values, null flags or None, text or None,
# the DICT kind's table or None); traceview/json_rows/_rows.c says what each kind holds.
Column = tuple[int, np.ndarray, np.ndarray | None, str | bytes | None, np.ndarray | None]


def chunks(
    frame: pl.DataFrame, rows_at_a_time: int, separator: bytes = b"\n"
) -> Iterator[tuple[int, bytes]]:
    """The frame's rows as JSON objects, `rows_at_a_time` rows a chunk: (how many, the objects
    joined by `separator`)."""
    for block in frame.iter_slices(max(BLOCK_ROWS, rows_at_a_time)):
        layout = _layout(block) if _rows is not None else None
        for start in range(0, block.height, rows_at_a_time):
            stop = min(start + rows_at_a_time, block.height)
            if layout is None:
                yield stop - start, _by_polars(block.slice(start, stop - start), separator)
            else:
                yield stop - start, _rows.rows(*layout, start, stop, separator)


def _by_polars(frame: pl.DataFrame, separator: bytes) -> bytes:
    # One object a line; no string holds a raw newline (JSON escapes it), so the lines' ends
    # are where the separators go.
    lines = io.BytesIO()
    frame.write_ndjson(lines)
    return lines.getvalue()[:-1].replace(b"\n", separator)


def _layout(frame: pl.DataFrame) -> tuple[tuple[bytes, ...], tuple[Column, ...]] | None:
    """The compiled part's pieces and columns for `frame`, or None where a column is of a type
    (or a struct with nulls) it does not write. A text that is the same in every row is written
    into the pieces."""
    assert _rows is not None
    pieces: list[bytes] = [b""]
    columns: list[Column] = []

    def add(series: pl.Series, opening: bytes) -> bool:
        pieces[-1] += opening + _string(pl.Series([series.name])) + b":"
        dtype = series.dtype
        if isinstance(dtype, pl.Struct):
            if series.null_count():
                return False
            fields = series.struct.unnest()
            if not fields.width:
                pieces[-1] += b"{}"
            for i, field in enumerate(fields.iter_columns()):
                if not add(field, b"{" if i == 0 else b","):
                    return False
            if fields.width:
                pieces[-1] += b"}"
            return True
        if dtype == pl.Null:
            pieces[-1] += b"null"
            return True
        if isinstance(dtype, _TEXTS) and _constant(series):  # e.g. pl.lit("X"): once, here
            pieces[-1] += _string(series.head(1).cast(pl.String))
            return True
        column = _column(series)
        if column is None:
            return False
        columns.append(column)
        pieces.append(b"")
        return True

    for i, series in enumerate(frame.iter_columns()):
        if not add(series, b"{" if i == 0 else b","):
            return None
    pieces[-1] += b"}" if frame.width else b"{}"
    return tuple(pieces), tuple(columns)


def _column(series: pl.Series) -> Column | None:
    """The compiled part's column for `series`, or None."""
    assert _rows is not None
    dtype = series.dtype
    if isinstance(dtype, _INTS) or (dtype == pl.UInt64 and _fits_int64(series)):
        nulls = series.is_null().to_numpy() if series.null_count() else None
        return _rows.INT, series.fill_null(0).cast(pl.Int64).to_numpy(), nulls, None, None
    if dtype == pl.Float64:
        milli = _as_milli(series)
        if milli is not None:
            return _rows.MILLI, *milli, None, None
    if isinstance(dtype, (pl.Float64, pl.Float32)):  # written shortest; null where not finite
        finite = pl.col(series.name).is_finite()
        text = series.to_frame().select(pl.when(finite).then(pl.col(series.name).cast(pl.String)))
        return _text(_rows.RAW, text.to_series())
    if isinstance(dtype, (pl.Categorical, pl.Enum)):
        return _dictionary(series) or _text(_rows.STRING, series.cast(pl.String))
    if dtype == pl.String:
        return _text(_rows.STRING, series)
    if dtype in (pl.Boolean, pl.UInt64):
        return _text(_rows.RAW, series.cast(pl.String))
    return None


def _dictionary(series: pl.Series) -> Column | None:
    """A categorical column as entry numbers into the JSON of its distinct values, each made
    once (a kernel's name, hundreds of bytes, is not copied for each of its thousands of rows);
    None where its category ids are too sparse for a table by id."""
    assert _rows is not None
    ids = series.to_physical()
    firsts = ids.arg_unique()
    distinct = ids.gather(firsts)
    kept = distinct.is_not_null().to_numpy()
    known = distinct.to_numpy()[kept].astype(np.int64)
    if known.size and int(known.max()) > 16 * len(series) + 65_536:
        return None
    entry = np.zeros(int(known.max()) + 1 if known.size else 1, dtype=np.int64)
    entry[known] = np.arange(known.size)
    texts = series.gather(firsts).filter(pl.Series(kept)).cast(pl.String)
    encoded = _rows.rows((b"", b""), (_text(_rows.STRING, texts),), 0, len(texts), b"\n")
    # An escaped string holds no raw newline: the separators are where entries end.
    lengths = [len(e) for e in encoded.split(b"\n")] if len(texts) else []
    table = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=table[1:])
    codes = entry[ids.fill_null(0).cast(pl.Int64).to_numpy()]
    nulls = ids.is_null().to_numpy() if ids.null_count() else None
    return _rows.DICT, codes, nulls, encoded.replace(b"\n", b""), table


def _string(one: pl.Series) -> bytes:
    """A one-row String series' value as JSON, escaped as every other string is."""
    assert _rows is not None
    return _rows.rows((b"", b""), (_text(_rows.STRING, one),), 0, 1, b"")


def _constant(series: pl.Series) -> bool:
    """One value in every row, none null (a literal's column answers at once)."""
    if not len(series) or series.null_count():
        return False
    if isinstance(series.dtype, (pl.Categorical, pl.Enum)):
        series = series.to_physical()
    return bool(series.min() == series.max())


def _fits_int64(series: pl.Series) -> bool:
    top = series.max()
    return top is None or int(top) < 2**63  # type: ignore[arg-type]


def _as_milli(series: pl.Series) -> tuple[np.ndarray, np.ndarray | None] | None:
    """A float column whose every finite value is the float nearest some k / 1000 with
    |k| < MILLI_LIMIT, and none -0.0: (k, flags where the value is null or not finite)."""
    x = series.to_numpy()  # null: NaN
    finite = np.isfinite(x)
    with np.errstate(over="ignore"):  # a float beyond 1e305 is not a thousandth: the check below
        k = np.rint(np.where(finite, x, 0.0) * 1000.0)
    if not (
        np.array_equal(k / 1000.0, np.where(finite, x, 0.0))
        and (np.abs(k) < MILLI_LIMIT).all()
        and not (np.signbit(x) & (x == 0)).any()
    ):
        return None
    return k.astype(np.int64), None if finite.all() else ~finite


def _text(kind: int, text: pl.Series) -> Column:
    """A text column: its offsets into the one string of all its values, and its null flags."""
    lengths = text.str.len_bytes().fill_null(0).to_numpy()
    offsets = np.zeros(len(text) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    joined = text.str.join("").item() if len(text) else ""
    nulls = text.is_null().to_numpy() if text.null_count() else None
    return kind, offsets, nulls, joined, None
