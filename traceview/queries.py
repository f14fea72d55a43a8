"""How traceview runs a lazy polars query: by polars' in-memory engine on a small table, where
its own choice (the streaming engine, which holds less at once) costs more to set up than the
query takes, and with only the optimizer's passes that pay there; by polars' choice (or the
engine the user set), fully optimized, on a large one.

A small rank's reading, model and measures run about fifteen lazy queries, each a fraction of a
millisecond of set-up under the streaming engine (docs/performance.md, "What each small trace
costs"). A large trace keeps polars' choice: under the in-memory engine its queries hold more at
once, and its peak memory rises."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

IN_MEMORY_BELOW_ROWS = 100_000  # a table this long or longer: polars chooses

# On a small table the optimizer's other passes (common subexpressions and subplans, pushing
# filters and slices down, ...) cost more than they save: 0.4-1 ms of a small rank's ~25
# (docs/performance.md, `bench_small.py --engines`). A query still reads only the columns it
# uses, its expressions folded.
SMALL_TABLE_PASSES = pl.QueryOptFlags.none(simplify_expression=True, projection_pushdown=True)


def engine_for(rows: int) -> Literal["in-memory", "auto"]:
    """The engine for a query over a table of `rows` rows."""
    return "in-memory" if rows < IN_MEMORY_BELOW_ROWS else "auto"


def optimizations_for(rows: int) -> pl.QueryOptFlags:
    """The optimizer's passes for a query over a table of `rows` rows."""
    return SMALL_TABLE_PASSES if rows < IN_MEMORY_BELOW_ROWS else pl.QueryOptFlags()


def collected(query: pl.LazyFrame, rows: int) -> pl.DataFrame:
    """`query`, run; `rows`: the length of the table it reads."""
    return query.collect(engine=engine_for(rows), optimizations=optimizations_for(rows))


def all_collected(queries: Sequence[pl.LazyFrame], rows: int) -> list[pl.DataFrame]:
    """The queries, run together (one pass over what they share)."""
    return pl.collect_all(queries, engine=engine_for(rows), optimizations=optimizations_for(rows))
