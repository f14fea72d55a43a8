"""Python functions over table rows, called once per distinct input rather than once per row.

Collective calls repeat the same few sizes, groups and names every step: a trace with a hundred
thousand of them holds a few hundred distinct combinations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import polars as pl


def per_distinct(
    frame: pl.DataFrame,
    inputs: Sequence[str],
    fn: Callable[..., tuple[object, ...]],
    outputs: dict[str, pl.DataType],
) -> pl.DataFrame:
    """`frame` with the columns `outputs` added: fn(*inputs) of each row, in that order, called
    once per distinct combination of the inputs (nulls included). Each row finds its answer by
    the number of its combination (gathered, not joined: a join on the inputs would copy the
    whole frame, every column, for a Gloo trace's million calls)."""
    distinct = (
        frame.lazy()
        .select(inputs)
        .with_row_index("_row")
        .group_by(inputs, maintain_order=True)
        .agg("_row")
        .collect()
    )
    results = [fn(*row) for row in distinct.select(inputs).iter_rows()]
    which = np.empty(frame.height, dtype=np.uint32)  # each row's combination
    which[distinct["_row"].explode().to_numpy()] = np.repeat(
        np.arange(distinct.height, dtype=np.uint32), distinct["_row"].list.len().to_numpy()
    )
    combination = pl.Series(which)
    return frame.with_columns(
        pl.Series(name, [r[i] for r in results], dtype=dtype).gather(combination)
        for i, (name, dtype) in enumerate(outputs.items())
    )
