"""How traceview runs a lazy polars query: by polars' in-memory engine on a small table, where
its own choice (the streaming engine, which holds less at once) costs more to set up than the
query takes; by polars' choice (or the engine the user set) on a large one.

A small rank's reading, model and measures run about fifteen lazy queries, each a fraction of a
millisecond of set-up under the streaming engine (docs/performance.md, "What each small trace
costs"). A large trace keeps polars' choice: under the in-memory engine its queries hold more at
once, and its peak memory rises."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

IN_MEMORY_BELOW_ROWS = 100_000  # a table this long or longer: polars chooses


def engine_for(rows: int) -> Literal["in-memory", "auto"]:
    """The engine for a query over a table of `rows` rows."""
    return "in-memory" if rows < IN_MEMORY_BELOW_ROWS else "auto"


def collected(query: pl.LazyFrame, rows: int) -> pl.DataFrame:
    """`query`, run; `rows`: the length of the table it reads."""
    return query.collect(engine=engine_for(rows))


def all_collected(queries: Sequence[pl.LazyFrame], rows: int) -> list[pl.DataFrame]:
    """The queries, run together (one pass over what they share)."""
    return pl.collect_all(queries, engine=engine_for(rows))
