"""per_distinct: a function of a row's inputs called once per distinct combination (nulls one of
them), each row given its combination's answer, in the frame's order."""

from __future__ import annotations

import polars as pl
import pytest

from traceview.model import distinct
from traceview.model.distinct import per_distinct


@pytest.fixture(autouse=True, params=["looked up", "joined"])
def way(request, monkeypatch):
    """Both ways a frame's answers are found: by a dict as its rows are read (a short frame),
    and by a join on the distinct combinations (a long one)."""
    if request.param == "joined":
        monkeypatch.setattr(distinct, "ROWS_LOOKED_UP", 0)
    return request.param


def test_one_call_per_combination_nulls_included_answers_in_row_order():
    frame = pl.DataFrame(
        {"a": [1, None, 1, None, 2, 1], "b": ["x", None, "x", None, None, "y"], "keep": range(6)}
    )
    calls: list[tuple[object, object]] = []

    def fn(a: object, b: object) -> tuple[object, ...]:
        calls.append((a, b))
        return f"{a}-{b}", len(calls)

    out = per_distinct(frame, ["a", "b"], fn, {"label": pl.String(), "call": pl.Int64()})
    assert calls == [(1, "x"), (None, None), (2, None), (1, "y")]  # first met, first called
    assert out.columns == ["a", "b", "keep", "label", "call"]
    assert out["keep"].to_list() == list(range(6))
    assert out["label"].to_list() == ["1-x", "None-None", "1-x", "None-None", "2-None", "1-y"]
    assert out["call"].to_list() == [1, 2, 1, 2, 3, 4]


def test_an_empty_frame_gets_the_columns_and_no_call():
    frame = pl.DataFrame(schema={"a": pl.Int64, "b": pl.String})
    out = per_distinct(frame, ["a", "b"], lambda a, b: (1 / 0,), {"x": pl.Float64()})
    assert out.schema == pl.Schema({"a": pl.Int64, "b": pl.String, "x": pl.Float64})
    assert out.height == 0
