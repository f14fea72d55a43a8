"""Several ranks' timelines measured together: their intervals and step spans stacked, each row
naming its rank's timeline by `part` (model/batch.py), so that each measure is one query over
all of them, not one a rank (a small rank's measures are a few dozen queries, each costing more
than its rows). A single timeline is a stack of one, whose tables have no `part`: a large
trace's measures read its tables as they are."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import TypeVar

import numpy as np
import polars as pl

from traceview.algebra import IntervalSet, apart, union
from traceview.model import Timeline
from traceview.model.batch import keyed, part_numbers, stacked
from traceview.queries import collected

T = TypeVar("T")


class Stack:
    """Timelines of one mode, their tables stacked. Interval sets of the stack (`compute`,
    `comm`) are in *moved* time: each part's times moved by its `shift` into a stretch of their
    own, so that one union serves every part and no part's intervals meet another's."""

    def __init__(self, timelines: Sequence[Timeline]) -> None:
        assert len({t.mode for t in timelines}) == 1, "a stack holds timelines of one mode"
        self.timelines = tuple(timelines)
        self.mode = timelines[0].mode
        self.parts = len(timelines)
        if self.parts == 1:
            self.intervals = timelines[0].intervals
            self.step_spans = timelines[0].step_spans
        else:
            self.intervals = stacked([t.intervals for t in timelines])
            self.step_spans = stacked([t.step_spans for t in timelines])
        # The launch shape of each compute interval, in their order (model/timeline.py
        # launch_shapes): as many rows as the compute intervals, else none is known.
        self.launch_shapes = pl.concat([t.launch_shapes for t in timelines])
        # Whether each part's communication can be seen (model/timeline.py comm_measured).
        self.comm_measured = np.array([t.comm_measured for t in timelines], dtype=bool)

    @cached_property
    def shift(self) -> np.ndarray:
        """What moves each part's times into its own stretch (nothing in a stack of one)."""
        if self.parts == 1:
            return np.zeros(1, np.int64)
        iv, spans = self.intervals, self.step_spans
        return apart(
            self.parts,
            (self.part_of(iv), iv["ts_ns"].to_numpy(), iv["end_ns"].to_numpy()),
            (self.part_of(spans), spans["span_start_ns"].to_numpy(),
             spans["span_end_ns"].to_numpy()),
        )  # fmt: skip

    def part_of(self, rows: pl.DataFrame) -> np.ndarray:
        """Each row's part (all 0 in a stack of one)."""
        found = part_numbers(rows)
        return np.zeros(rows.height, np.int64) if found is None else found.astype(np.int64)

    def moved(self, rows: pl.DataFrame, column: str) -> np.ndarray:
        """A time column of `rows` (of this stack) in moved time."""
        times = rows[column].to_numpy()
        return times if self.parts == 1 else times + self.shift[self.part_of(rows)]

    def kind_set(self, kind: str) -> IntervalSet:
        """The union of one kind's intervals ("compute", "comm"), in moved time: each part's
        own union, as `analysis/spans.py` kind_set gives it alone."""
        # Lazily, so that only the columns read are filtered (the intervals are wide).
        rows = collected(
            self.intervals.lazy()
            .filter(pl.col("kind") == kind)
            .select(keyed(self.intervals, "ts_ns", "end_ns")),
            self.intervals.height,
        )
        return union(self.moved(rows, "ts_ns"), self.moved(rows, "end_ns"))

    @cached_property
    def work(self) -> pl.DataFrame:
        """The intervals of work, with only the columns the breakdowns read (the intervals are
        wide: filtering them all would copy every column)."""
        return collected(
            self.intervals.lazy()
            .filter(pl.col("kind") != "other")
            .select(
                keyed(
                    self.intervals,
                    "kind",
                    "name",
                    "ts_ns",
                    "end_ns",
                    "launch_ns",
                    "step",
                    "backward",
                )
            ),
            self.intervals.height,
        )

    @cached_property
    def compute(self) -> IntervalSet:
        return self.kind_set("compute")

    @cached_property
    def comm(self) -> IntervalSet:
        return self.kind_set("comm")

    def split(self, part: np.ndarray, items: Sequence[T]) -> list[list[T]]:
        """Items, each of the part given, as one list a part (in their order)."""
        out: list[list[T]] = [[] for _ in range(self.parts)]
        for p, item in zip(part.tolist(), items, strict=True):
            out[p].append(item)
        return out
