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
    once per distinct combination of the inputs (nulls included). Each row finds its answer by
    its combination's number, joined on the inputs alone and gathered: joining the answers to
    the frame would copy every column of it (a Gloo trace's million calls)."""
    keys = frame.select(inputs)
    distinct = keys.unique(maintain_order=True)
    results = [fn(*row) for row in distinct.iter_rows()]
    answers = pl.DataFrame(
        [
            pl.Series(name, [r[i] for r in results], dtype=dtype)
            for i, (name, dtype) in enumerate(outputs.items())
        ]
    )
    number = keys.join(
        distinct.with_row_index("_number"),
        on=list(inputs),
        how="left",
        nulls_equal=True,
        maintain_order="left",
    )["_number"]
    return frame.hstack(answers[number].get_columns())
