"""Per collective type: how many, how long in total, how many bytes where recorded."""

from __future__ import annotations

import msgspec
import polars as pl


class CollectiveSummary(msgspec.Struct, frozen=True, kw_only=True):
    collective: str  # all_reduce, all_gather, ...; "unknown" when the trace does not say
    count: int
    total_ns: int  # sum of durations (concurrent collectives each count)
    bytes: int | None  # sum over the calls whose size is recorded; None when none is
    bytes_known: int  # how many calls had a recorded size


def collective_summaries(calls: pl.DataFrame) -> list[CollectiveSummary]:
    """From the per-call table (analysis/collectives.py)."""
    table = (
        calls.group_by(pl.col("collective").fill_null("unknown"))
        .agg(
            count=pl.len(),
            total_ns=pl.col("dur_ns").sum(),
            bytes=pl.col("bytes").sum(),
            bytes_known=pl.col("bytes").count(),
        )
        .sort("total_ns", descending=True)
    )
    return [
        CollectiveSummary(
            collective=r["collective"],
            count=r["count"],
            total_ns=r["total_ns"],
            bytes=r["bytes"] if r["bytes_known"] else None,
            bytes_known=r["bytes_known"],
        )
        for r in table.iter_rows(named=True)
    ]
