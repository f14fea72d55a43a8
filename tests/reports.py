"""Comparing rank reports (or failures) made two ways: field by field, tables by their rows in
order."""

from __future__ import annotations

import polars as pl

from traceview.analysis.rank import RankReport
from traceview.loader.parallel import Failure


def same(a: RankReport | Failure, b: RankReport | Failure) -> bool:
    """Field by field, tables by their rows in order."""
    if isinstance(a, Failure) or isinstance(b, Failure):
        return a == b
    for field in a.__struct_fields__:
        x, y = getattr(a, field), getattr(b, field)
        if isinstance(x, pl.DataFrame) or isinstance(y, pl.DataFrame):
            if not (isinstance(x, pl.DataFrame) and isinstance(y, pl.DataFrame) and x.equals(y)):
                return False
        elif x != y:
            return False
    return True
