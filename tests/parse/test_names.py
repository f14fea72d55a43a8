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


def test_names_that_became_categories_after_a_pattern_was_asked_match_it_too():
    # The answer for a pattern is kept, and only categories added since are matched: a later
    # frame's new names must match, and the earlier ones still.
    first = pl.DataFrame(
        {"name": ["ncclKernel_First", "aten::mm"]}, schema={"name": pl.Categorical()}
    )
    assert _matching(first, r"^ncclKernel_") == ["ncclKernel_First"]
    later = pl.DataFrame(
        {"name": ["aten::add", "ncclKernel_Later", "ncclKernel_First", "ncclKernel_Later"]},
        schema={"name": pl.Categorical()},
    )
    assert _matching(later, r"^ncclKernel_") == [
        "ncclKernel_Later",
        "ncclKernel_First",
        "ncclKernel_Later",
    ]
    assert _matching(first, r"^ncclKernel_") == ["ncclKernel_First"]


def test_patterns_asked_before_and_after_names_were_added_each_match_their_own():
    # The categories are made once for every pattern asked of the same ones: a pattern asked
    # first after names were added (from the first category) and one asked before (only the
    # new ones) must each see every name of theirs, whatever order they are asked in.
    first = pl.DataFrame(
        {"name": ["c10d::allreduce_", "aten::mm", "gloo:all_reduce"]},
        schema={"name": pl.Categorical()},
    )
    assert _matching(first, r"^c10d::") == ["c10d::allreduce_"]
    later = pl.DataFrame(
        {"name": ["gloo:broadcast", "c10d::broadcast_", "gloo:all_reduce", "c10d::allreduce_"]},
        schema={"name": pl.Categorical()},
    )
    assert _matching(later, r"^gloo:") == ["gloo:broadcast", "gloo:all_reduce"]
    assert _matching(later, r"^c10d::") == ["c10d::broadcast_", "c10d::allreduce_"]
    assert _matching(first, r"^gloo:") == ["gloo:all_reduce"]
