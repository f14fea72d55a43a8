"""named(): the rows whose name matches a pattern, the pattern run once per distinct name."""

from __future__ import annotations

import polars as pl

from traceview.parse.names import named


def _matching(frame: pl.DataFrame, pattern: str) -> list[str | None]:
    return frame.filter(named(frame, pattern))["name"].to_list()


def test_names_held_as_categories_match_only_their_own_rows():
    # Another frame's names are categories too (the categories are shared): they match the
    # pattern, but no row of this frame holds them.
    pl.Series(["nccl:all_reduce_elsewhere", "ncclKernel_Other"], dtype=pl.Categorical)
    frame = pl.DataFrame(
        {"name": ["aten::mm", "nccl:all_reduce", None, "nccl:all_reduce", "aten::add"]},
        schema={"name": pl.Categorical()},
    )
    assert _matching(frame, r"^nccl") == ["nccl:all_reduce", "nccl:all_reduce"]
    assert _matching(frame, r"^no such name$") == []


def test_names_held_as_strings_match_too():
    frame = pl.DataFrame({"name": ["aten::mm", "nccl:broadcast", None]})
    assert _matching(frame, r"broadcast$") == ["nccl:broadcast"]
    assert _matching(frame, r"^nccl:all") == []
