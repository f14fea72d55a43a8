"""Straggler recurrence: per step, which rank the others waited for, and whether it is the same
rank step after step (its host or its GPU) or a different one each step (noise shared by every
rank: data loading, uneven inputs, host jitter). Definitions: docs/metrics.md "Stragglers"."""

from __future__ import annotations

import math
from typing import Literal

import msgspec
import polars as pl

# A step has a straggler when the ranks spend this share of their time in its collectives
# waiting (the same share as the straggler finding's).
STEP_WAIT_SHARE = 0.10
# Below this many such steps nothing is said about recurrence.
MIN_STEPS = 3
# One rank recurs when it is the step's straggler in so many steps that ranks drawn at random
# each step would do so less often than this (the chance for any of the ranks).
CHANCE = 0.01

Verdict = Literal["one rank", "rotating", "undecided", "too few steps"]


class StepStraggler(msgspec.Struct, frozen=True, kw_only=True):
    step: int
    collectives: int  # matched collectives of the step
    wait_share: float  # the ranks' wait / their time in the step's collectives
    rank: int | None  # the rank the others waited for longest; None below STEP_WAIT_SHARE or tied
    last_at: int  # the step's collectives that rank arrived last at
    caused_ns: int  # the others' wait at those collectives


class Recurrence(msgspec.Struct, frozen=True, kw_only=True):
    steps: tuple[StepStraggler, ...]  # every step with matched collectives, in order
    judged: int  # steps with a straggler
    verdict: Verdict
    rank: int | None  # the rank that is the straggler most often (None when tied or none)
    count: int  # steps it is the straggler in
    distinct: int  # ranks that are some step's straggler
    chance: float | None  # how likely ranks drawn at random give `rank` `count` steps or more
    ranks: int


def recurrence(calls: pl.DataFrame, ranks: int) -> Recurrence:
    """calls: an aligned job's matched collective calls (rank, match, step, wait_ns,
    transfer_ns, last_rank: cross_rank.CrossRank.calls)."""
    steps = _per_step(calls)
    stragglers = [s.rank for s in steps if s.rank is not None]
    counts = {r: stragglers.count(r) for r in set(stragglers)}
    judged = len(stragglers)
    top = max(counts.values(), default=0)
    leaders = [r for r, c in counts.items() if c == top]
    rank = leaders[0] if len(leaders) == 1 else None
    chance = _chance(judged, top, ranks) if judged else None
    if judged < MIN_STEPS:
        verdict: Verdict = "too few steps"
    elif rank is not None and chance is not None and chance < CHANCE:
        verdict = "one rank"
    elif top * 2 <= judged and len(counts) >= 2:
        verdict = "rotating"
    else:
        verdict = "undecided"
    return Recurrence(
        steps=tuple(steps), judged=judged, verdict=verdict, rank=rank, count=top,
        distinct=len(counts), chance=chance, ranks=ranks,
    )  # fmt: skip


def _per_step(calls: pl.DataFrame) -> list[StepStraggler]:
    if calls.is_empty():
        return []
    by_match = calls.group_by("match").agg(
        step=pl.col("step").drop_nulls().min(),
        last_rank=pl.col("last_rank").first(),
        caused_ns=pl.col("wait_ns").sum(),  # the last rank's own wait is 0: the others' wait
        busy_ns=(pl.col("wait_ns") + pl.col("transfer_ns")).sum(),
    )
    by_match = by_match.filter(pl.col("step").is_not_null())
    totals = by_match.group_by("step").agg(
        collectives=pl.len(), caused=pl.col("caused_ns").sum(), busy=pl.col("busy_ns").sum()
    )
    # Per step, the rank whose late arrivals the others waited longest for, and the runner-up's
    # wait (a tie names no one).
    leaders = (
        by_match.group_by("step", "last_rank")
        .agg(last_at=pl.len(), caused_ns=pl.col("caused_ns").sum())
        .sort(["step", "caused_ns", "last_rank"], descending=[False, True, False])
        .group_by("step", maintain_order=True)
        .agg(
            rank=pl.col("last_rank").first(),
            last_at=pl.col("last_at").first(),
            most=pl.col("caused_ns").first(),
            next=pl.col("caused_ns").slice(1, 1).first(),
        )
    )
    table = (
        totals.join(leaders, on="step", how="left")
        .with_columns(share=pl.when(pl.col("busy") > 0).then(pl.col("caused") / pl.col("busy")))
        .with_columns(
            named=(pl.col("share") >= STEP_WAIT_SHARE)
            & (pl.col("next").is_null() | (pl.col("next") < pl.col("most")))
        )
        .sort("step")
    )
    return [
        StepStraggler(
            step=step,
            collectives=collectives,
            wait_share=share or 0.0,
            rank=rank if named else None,
            last_at=last_at if named else 0,
            caused_ns=most if named else 0,
        )
        for step, collectives, share, rank, last_at, most, named in table.select(
            "step", "collectives", "share", "rank", "last_at", "most", "named"
        ).iter_rows()
    ]


def _chance(steps: int, count: int, ranks: int) -> float:
    """P(some rank is drawn `count` or more times in `steps` draws of one rank of `ranks`, each
    equally likely), bounded above by the ranks times one rank's binomial tail."""
    p = 1 / ranks
    tail = sum(math.comb(steps, k) * p**k * (1 - p) ** (steps - k) for k in range(count, steps + 1))
    return min(1.0, ranks * tail)
