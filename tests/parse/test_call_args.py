"""A batch's call arguments read column by column: the same values as reading each alone."""

import msgspec
import polars as pl
import pytest

from traceview.analysis.calls import _BUS_FACTOR, bus_factor, bus_factors
from traceview.parse.args import COMM_ARGS_SCHEMA, NO_RAW
from traceview.parse.columns import comm_frame
from traceview.parse.readers import raw_text, raw_texts


def test_raw_args_read_together_are_read_alone():
    pieces = msgspec.json.decode(b'[[[2082411]], ["float"], "x\\u00e9", 3]', type=list[msgspec.Raw])
    odd = [msgspec.Raw(b'"a\xff"'), msgspec.Raw(b'"\xe2\x82"')]  # not UTF-8: replaced
    values = [*pieces, NO_RAW, None, *odd]
    assert raw_texts(values) == [
        "[[2082411]]", '["float"]', '"x\\u00e9"', "3", None, None, '"a\ufffd"', '"\ufffd"'
    ]  # fmt: skip
    assert raw_texts(values) == [None if v is None else raw_text(v) for v in values]
    assert raw_texts([]) == []


def test_a_batch_without_calls_has_an_empty_table():
    frame = comm_frame([])
    assert frame.height == 0 and frame.schema == pl.Schema(COMM_ARGS_SCHEMA)


@pytest.mark.parametrize("collective", [*_BUS_FACTOR, "barrier", None])
def test_bus_factors_of_a_column_are_the_formulas(collective):
    sizes = [None, 0, 1, 2, 3, 8, 300]
    calls = pl.DataFrame(
        {"collective": [collective] * len(sizes), "group_size": sizes},
        schema={"collective": pl.String, "group_size": pl.Int64},
    )
    assert bus_factors(calls).to_list() == [bus_factor(collective, n) for n in sizes]
