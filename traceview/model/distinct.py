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
    its combination's first row (gathered, not joined: a join on the inputs would copy the whole
    frame, every column, for a Gloo trace's million calls; and three queries whatever the rows,
    for a small trace's sake)."""
    first = (  # each row's combination, by the first row that has it
        frame.lazy()
        .select(inputs)
        .with_row_index("_row")
        .select(pl.col("_row").first().over(inputs))
        .collect()["_row"]
        .to_numpy()
    )
    heads = np.flatnonzero(first == np.arange(frame.height))  # first rows, in order
    results = [fn(*row) for row in frame.select(inputs)[heads].iter_rows()]
    answers = pl.DataFrame(
        [
            pl.Series(name, [r[i] for r in results], dtype=dtype)
            for i, (name, dtype) in enumerate(outputs.items())
        ]
    )
    number = np.empty(frame.height, dtype=np.int64)
    number[heads] = np.arange(heads.size)
    return frame.hstack(answers[number[first]].get_columns())
