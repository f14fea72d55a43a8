"""Per collective type: how many, how long in total, how many bytes where recorded."""

from __future__ import annotations

import msgspec
import polars as pl

from traceview.model.batch import PART, keyed


class CollectiveSummary(msgspec.Struct, frozen=True, kw_only=True):
    collective: str  # all_reduce, all_gather, ...; "unknown" when the trace does not say
    count: int
    total_ns: int  # sum of durations (concurrent collectives each count)
    bytes: int | None  # sum over the calls whose size is recorded; None when none is
    bytes_known: int  # how many calls had a recorded size


def collective_summaries(calls: pl.DataFrame) -> list[CollectiveSummary]:
    """From one rank's per-call table (analysis/calls.py)."""
    return summaries_by_part(calls, 1)[0]


def summaries_by_part(calls: pl.DataFrame, parts: int) -> list[list[CollectiveSummary]]:
    """Each part's summaries, from a stack's per-call table (analysis/stack.py; with `part`
    where it has several), the longest in total first."""
    by_part = keyed(calls)  # [] in a stack of one
    table = (
        calls.group_by(*by_part, pl.col("collective").fill_null("unknown"))
        .agg(
            count=pl.len(),
            total_ns=pl.col("dur_ns").sum(),
            bytes=pl.col("bytes").sum(),
            bytes_known=pl.col("bytes").count(),
        )
        .sort(
            [*by_part, "total_ns", "collective"],
            descending=[*(False for _ in by_part), True, False],  # ties by name
        )
    )
    out: list[list[CollectiveSummary]] = [[] for _ in range(parts)]
    for r in table.iter_rows(named=True):
        out[r.get(PART, 0)].append(
            CollectiveSummary(
                collective=r["collective"],
                count=r["count"],
                total_ns=r["total_ns"],
                bytes=r["bytes"] if r["bytes_known"] else None,
                bytes_known=r["bytes_known"],
            )
        )
    return out
