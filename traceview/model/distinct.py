"""Python functions over table rows, called once per distinct input rather than once per row.

Collective calls repeat the same few sizes, groups and names every step: a trace with a hundred
thousand of them holds a few hundred distinct combinations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl

# Below this many rows each row's answer is looked up in a dict as the rows are read: a few
# Python operations per row cost less than the three queries (unique, join, gather) that each
# cost a tenth of a millisecond however small the table (a small rank's collectives).
ROWS_LOOKED_UP = 1_000


def per_distinct(
    frame: pl.DataFrame,
    inputs: Sequence[str],
    fn: Callable[..., tuple[object, ...]],
    outputs: dict[str, pl.DataType],
) -> pl.DataFrame:
    """`frame` with the columns `outputs` added: fn(*inputs) of each row, in that order, called
    once per distinct combination of the inputs (nulls included), first met first. On a long
    frame each row finds its answer by its combination's number, joined on the inputs alone and
    gathered: joining the answers to the frame would copy every column of it (a Gloo trace's
    million calls)."""
    keys = frame.select(inputs)
    if keys.height < ROWS_LOOKED_UP:
        return frame.hstack(_columns(outputs, _looked_up(keys, fn)))
    distinct = keys.unique(maintain_order=True)
    answers = pl.DataFrame(_columns(outputs, [fn(*row) for row in distinct.iter_rows()]))
    number = keys.join(
        distinct.with_row_index("_number"),
        on=list(inputs),
        how="left",
        nulls_equal=True,
        maintain_order="left",
    )["_number"]
    return frame.hstack(answers[number].get_columns())


def _looked_up(
    keys: pl.DataFrame, fn: Callable[..., tuple[object, ...]]
) -> list[tuple[object, ...]]:
    """fn of each row, called once per distinct row (first met, first called)."""
    answers: dict[tuple[object, ...], tuple[object, ...]] = {}
    results = []
    for row in keys.iter_rows():
        if (answer := answers.get(row)) is None:
            answer = answers[row] = fn(*row)
        results.append(answer)
    return results


def _columns(outputs: dict[str, pl.DataType], results: list[tuple[object, ...]]) -> list[pl.Series]:
    return [
        pl.Series(name, [r[i] for r in results], dtype=dtype)
        for i, (name, dtype) in enumerate(outputs.items())
    ]
