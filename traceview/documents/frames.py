"""A table of typed records (msgspec structs), its columns taken from the record's own
declaration: what the CSV renderer and the dashboard lay out, never spelled again."""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Any

import polars as pl

_POLARS = {bool: pl.Boolean(), int: pl.Int64(), float: pl.Float64(), str: pl.String()}


def columns(record: type) -> dict[str, pl.DataType]:
    """The record's fields of one plain type (int, float, str, bool, each maybe None), in
    their order, as polars types; other fields (nested records, paths) are left out."""
    out = {}
    for name, hint in typing.get_type_hints(record).items():
        kinds = [t for t in typing.get_args(hint) or (hint,) if t is not type(None)]
        if len(kinds) == 1 and kinds[0] in _POLARS:
            out[name] = _POLARS[kinds[0]]
    return out


def frame(
    rows: Sequence[Any], record: type, lead: tuple[str, Sequence[str]] | None = None
) -> pl.DataFrame:
    """`rows` (instances of `record`) as a table of its plain columns; `lead`: a column of
    text put before them, its name and its values."""
    schema = ({lead[0]: pl.String()} if lead else {}) | columns(record)
    data: dict[str, list[Any]] = {lead[0]: list(lead[1])} if lead else {}
    for name in columns(record):
        data[name] = [getattr(row, name) for row in rows]
    return pl.DataFrame(data, schema=schema)
