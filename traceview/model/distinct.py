"""Python functions over table rows, called once per distinct input rather than once per row.

Collective calls repeat the same few sizes, groups and names every step: a trace with a hundred
thousand of them holds a few hundred distinct combinations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl


def per_distinct(
    frame: pl.DataFrame,
    inputs: Sequence[str],
    fn: Callable[..., tuple[object, ...]],
    outputs: dict[str, pl.DataType],
) -> pl.DataFrame:
    """`frame` with the columns `outputs` added: fn(*inputs) of each row, in that order, called
    once per distinct combination of the inputs (nulls included)."""
    distinct = frame.select(inputs).unique(maintain_order=True)
    results = [fn(*row) for row in distinct.iter_rows()]
    table = distinct.with_columns(
        pl.Series(name, [r[i] for r in results], dtype=dtype)
        for i, (name, dtype) in enumerate(outputs.items())
    )
    return frame.join(table, on=list(inputs), how="left", nulls_equal=True, maintain_order="left")
