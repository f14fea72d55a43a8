"""A frame's rows as JSON: the compiled writer gives polars' NDJSON writer's bytes, for every
column type it takes (the others go to polars' writer), and turns away columns that do not
describe their rows."""

from __future__ import annotations

import io

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traceview import json_rows
from traceview.json_rows import MILLI_LIMIT, chunks

_rows = json_rows._rows


def test_the_compiled_writer_is_built():
    assert _rows is not None, "pip install -e . builds traceview/json_rows/_rows.c"


def by_polars(frame: pl.DataFrame) -> bytes:
    out = io.BytesIO()
    frame.write_ndjson(out)
    return out.getvalue()


def written(frame: pl.DataFrame, rows: int = 1000, separator: bytes = b"\n") -> bytes:
    text = separator.join(chunk for _, chunk in chunks(frame, rows, separator))
    return text + separator if frame.height else text


EVERY_BYTE = "".join(map(chr, range(0x80))) + "é\u2028😀"


def test_every_kind_of_column_as_polars_writes_it():
    n = 6
    frame = pl.DataFrame(
        {
            "ph": ["X"] * n,  # the same in every row: written once, into the keys' text
            "int": [0, -1, 2**63 - 1, -(2**63), None, 42],
            "small": pl.Series([0, 255, None, 7, 8, 9], dtype=pl.UInt8),
            "big": pl.Series([2**64 - 1, 0, None, 1, 2, 3], dtype=pl.UInt64),
            # thousandths (written from k), then floats that are not, and ones polars writes null
            "ts": [0.001, 1522.889, 999999999999.999, -0.5, 100.0, None],
            "f": [-0.0, 1e16, 1e-7, float("nan"), float("inf"), 0.1 + 0.2],
            "f32": pl.Series([0.1, 1e-7, None, float("-inf"), 3.0, 2.5], dtype=pl.Float32),
            "text": [EVERY_BYTE, "", None, 'a"b\\c', "\n", "plain"],
            "cat": pl.Series(["x", "y", None, "x", EVERY_BYTE, "y"], dtype=pl.Categorical),
            "enum": pl.Series(["a", "b", "a", None, "b", "a"], dtype=pl.Enum(["a", "b"])),
            "flag": [True, False, None, True, True, False],
            "none": pl.Series([None] * n, dtype=pl.Null),
            "args": pl.DataFrame(
                {"step": [1, None, 3, 4, 5, 6], 'k"ey\n': ["v"] * n, "inner": [{"a": 1}] * n}
            ).to_struct(),
        }
    )
    assert written(frame, rows=4) == by_polars(frame)
    assert written(frame, rows=4, separator=b",\n") == by_polars(frame).replace(b"\n", b",\n")


@pytest.mark.parametrize(
    "values",
    [
        [MILLI_LIMIT - 1, -(MILLI_LIMIT - 1), 1, 0],  # the widest thousandths written from k
        [MILLI_LIMIT, 1],  # one wider: every value written as polars formats it
    ],
)
def test_thousandths_at_the_limit(values):
    frame = pl.DataFrame({"ts": pl.Series(values, dtype=pl.Int64) / 1000})
    assert written(frame) == by_polars(frame)


def test_types_it_does_not_take_are_written_by_polars():
    frame = pl.DataFrame(
        {
            "when": pl.Series([0, 86_400_000], dtype=pl.Date),
            "list": [[1, 2], None],
            "args": [{"a": 1}, None],  # a struct with a null row
            "n": [1, 2],
        }
    )
    assert json_rows._layout(frame) is None
    assert written(frame) == by_polars(frame)


def test_without_the_compiled_writer_the_same_bytes(monkeypatch):
    frame = pl.DataFrame({"name": ["a", None], "ts": [1.5, 2.0], "n": [1, None]})
    compiled = written(frame)
    monkeypatch.setattr(json_rows, "_rows", None)
    assert written(frame) == compiled == by_polars(frame)


def test_no_rows_no_chunks():
    assert list(chunks(pl.DataFrame({"a": []}, schema={"a": pl.Int64}), 10)) == []


_COLUMN = st.sampled_from(["int", "uint32", "milli", "float", "text", "cat", "flag"])


@st.composite
def frames(draw):
    n = draw(st.integers(1, 40))
    columns = {}
    for i, kind in enumerate(draw(st.lists(_COLUMN, min_size=1, max_size=6))):
        maybe = st.none() | st.just(0)  # 0: a value
        nulls = [draw(maybe) is None for _ in range(n)]

        def values(strategy, nulls=nulls):
            return [None if null else draw(strategy) for null in nulls]

        name = f"{kind}{i}"
        if kind == "int":
            columns[name] = pl.Series(values(st.integers(-(2**63), 2**63 - 1)), dtype=pl.Int64)
        elif kind == "uint32":
            columns[name] = pl.Series(values(st.integers(0, 2**32 - 1)), dtype=pl.UInt32)
        elif kind == "milli":
            k = values(st.integers(-(10**16), 10**16))
            columns[name] = pl.Series(k, dtype=pl.Int64) / 1000
        elif kind == "float":
            columns[name] = pl.Series(values(st.floats(allow_nan=True)), dtype=pl.Float64)
        elif kind in ("text", "cat"):
            text = pl.Series(values(st.text(max_size=12)), dtype=pl.String)
            columns[name] = text if kind == "text" else text.cast(pl.Categorical)
        else:
            columns[name] = pl.Series(values(st.booleans()), dtype=pl.Boolean)
    frame = pl.DataFrame(columns)
    if draw(st.booleans()):
        frame = frame.select(pl.struct(*frame.columns).alias("args"), "*")
    return frame


@settings(max_examples=300, deadline=None)
@given(frames(), st.integers(1, 50))
def test_random_frames_as_polars_writes_them(frame, rows):
    assert written(frame, rows) == by_polars(frame)


def int_column(values, nulls=None):
    return (_rows.INT, np.asarray(values, dtype=np.int64), nulls, None, None)


def test_columns_that_do_not_describe_their_rows_are_turned_away():
    rows = _rows.rows
    text = (_rows.STRING, np.array([0, 2, 9], dtype=np.int64), None, "ab", None)
    with pytest.raises(ValueError, match="offsets leave its text"):
        rows((b"", b""), (text,), 0, 2, b"\n")
    with pytest.raises(ValueError, match="int64 for every row"):
        rows((b"", b""), (int_column([1, 2]),), 0, 3, b"\n")
    with pytest.raises(ValueError, match="int64 for every row"):
        rows((b"", b""), ((_rows.INT, np.zeros(4, dtype=np.int32), None, None, None),), 0, 1, b"")
    with pytest.raises(ValueError, match="null flags"):
        rows((b"", b""), (int_column([1, 2], np.zeros(1, dtype=bool)),), 0, 2, b"\n")
    with pytest.raises(ValueError, match="unknown column kind"):
        rows((b"", b""), ((9, np.zeros(1, dtype=np.int64), None, None, None),), 0, 1, b"")
    with pytest.raises(ValueError, match="one piece more"):
        rows((b"",), (int_column([1]),), 0, 1, b"")
    with pytest.raises(ValueError, match="0 <= start <= stop"):
        rows((b"", b""), (int_column([1]),), 1, 0, b"")
    with pytest.raises(TypeError, match="str or bytes"):
        rows((b"", b""), ((_rows.RAW, np.zeros(2, dtype=np.int64), None, None, None),), 0, 1, b"")
    table = np.array([0, 3, 5], dtype=np.int64)  # entries '"a"' and '{}'
    entry = (_rows.DICT, np.array([1, 2, 0], dtype=np.int64), None, '"a"{}', table)
    with pytest.raises(ValueError, match="not in its table"):
        rows((b"", b""), (entry,), 0, 2, b"\n")
    with pytest.raises(ValueError, match="table leaves its text"):
        rows((b"", b""), ((*entry[:3], '"a"', table),), 0, 1, b"\n")
    with pytest.raises(TypeError, match="has a table"):
        rows((b"", b""), ((*entry[:4], None),), 0, 1, b"\n")
    assert rows((b"[", b"]"), (entry,), 0, 1, b",") == b"[{}]"
    nulls = np.array([0, 1], dtype=bool)
    assert rows((b"[", b"]"), (int_column([1, 2], nulls),), 0, 2, b",") == b"[1],[null]"
    # a null row's entry number is not looked up
    codes = np.array([5, 0, -7], dtype=np.int64)
    flagged = (_rows.DICT, codes, np.array([1, 0, 1], dtype=bool), '"a"{}', table)
    assert rows((b"", b""), (flagged,), 0, 3, b",") == b'null,"a",null'
