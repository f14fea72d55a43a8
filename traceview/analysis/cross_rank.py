"""Across the ranks of one job: match each collective call between ranks, align the ranks'
clocks on the ends of matched collectives, and split each call into waiting for the last rank
to arrive and the transfer after it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

KEY = ["step", "pg_key", "order"]
# Collectives whose message size may differ from rank to rank.
UNEVEN = ["all_to_all", "send_recv", "send", "recv", "gather", "scatter"]


@dataclass(frozen=True, kw_only=True)
class RankAlignment:
    rank: int
    offset_ns: float  # subtract from this rank's times to put them on the reference clock
    residual_ns: float  # median |end - offset - reference end| over matched collectives
    wait_ns: int  # time in collectives waiting for the last rank to arrive
    transfer_ns: int  # time in collectives after every rank had arrived
    last_arrivals: int  # matched collectives this rank arrived at last


@dataclass(frozen=True, kw_only=True)
class StepSkew:
    step: int
    shortest_ns: int
    longest_ns: int
    slowest_rank: int

    @property
    def skew_ns(self) -> int:
        return self.longest_ns - self.shortest_ns


@dataclass(frozen=True, kw_only=True)
class CrossRank:
    reference_rank: int
    matched: int  # collective calls matched on every rank
    unmatched: int  # calls on some rank with no partner on another
    ranks: tuple[RankAlignment, ...]
    straggler: int | None  # the rank that arrives last most often
    calls: pl.DataFrame  # every matched call per rank, aligned: + wait_ns, transfer_ns, match

    def of(self, rank: int) -> RankAlignment:
        return next(r for r in self.ranks if r.rank == rank)


def match_calls(calls: pl.DataFrame) -> pl.DataFrame:
    """Key each call: its sequence number in its group where recorded, else its order among
    the calls of the same type and size in its group and step (Gloo's two worker threads can
    start queued collectives a little out of order; same-sized ones are interchangeable).
    Keeps keys present on every rank with the same collective type and size."""
    ranks = calls["rank"].n_unique()
    same = ["rank", "step", "pg_key", "collective", "size_key"]
    keyed = calls.with_columns(
        pg_key=pl.col("pg").fill_null("default"),
        # Sizes differ across ranks for these: they cannot tell calls apart.
        size_key=pl.when(pl.col("collective").is_in(UNEVEN)).then(-1).otherwise(pl.col("bytes")),
    ).with_columns(
        order=pl.when(pl.col("seq").is_not_null())
        .then(pl.col("seq").cast(pl.String))
        .otherwise(
            pl.format(
                "{}/{}/{}",
                pl.col("collective").fill_null("?"),
                pl.col("size_key").fill_null(-1),
                pl.int_range(pl.len()).over(same, order_by="start_ns"),
            )
        )
    )
    agreed = keyed.group_by(KEY).agg(
        n=pl.len(),
        kinds=pl.col("collective").n_unique(),
        sizes=pl.col("bytes").n_unique(),
        uneven=pl.col("collective").is_in(UNEVEN).any(),
    )
    good = agreed.filter(
        (pl.col("n") == ranks)
        & (pl.col("kinds") == 1)
        & ((pl.col("sizes") <= 1) | pl.col("uneven"))
    )
    return keyed.join(good.select(KEY).with_row_index("match"), on=KEY, how="inner")


def align(calls: pl.DataFrame, shared_clock: bool = False) -> CrossRank | None:
    """calls: the collective-call rows of every rank (rank, step, pg, seq, start_ns, end_ns, ...).
    With `shared_clock` (every trace from one host) the clocks are already one and no offset is
    estimated; the residual is then the spread of the ends themselves. None below two ranks."""
    ranks = sorted(calls["rank"].drop_nulls().unique().to_list())
    if len(ranks) < 2:
        return None
    matched = match_calls(calls)
    reference = ranks[0]
    ref_end = matched.filter(pl.col("rank") == reference).select("match", ref_end="end_ns")
    offsets: dict[int, tuple[float, float]] = {}
    for rank in ranks:
        d = (
            matched.filter(pl.col("rank") == rank)
            .join(ref_end, on="match")
            .select(d=(pl.col("end_ns") - pl.col("ref_end")).cast(pl.Float64))["d"]
            .to_numpy()
        )
        offset = float(np.median(d)) if d.size and not shared_clock else 0.0
        offsets[rank] = (offset, float(np.median(np.abs(d - offset))) if d.size else 0.0)
    off = pl.DataFrame(
        {"rank": ranks, "offset": [offsets[r][0] for r in ranks]},
        schema={"rank": pl.Int32, "offset": pl.Float64},
    )
    aligned = (
        matched.join(off, on="rank")
        .with_columns(arrive=pl.col("start_ns") - pl.col("offset"))
        .with_columns(last=pl.col("arrive").max().over("match"))
        .with_columns(
            wait_ns=(pl.col("last") - pl.col("arrive"))
            .clip(0, pl.col("dur_ns"))
            .round()
            .cast(pl.Int64),
        )
        .with_columns(transfer_ns=pl.col("dur_ns") - pl.col("wait_ns"))
    )
    last = (
        aligned.sort("arrive", descending=True)
        .group_by("match")
        .agg(pl.col("rank").first())
        .group_by("rank")
        .len()
    )
    last_counts = dict(last.iter_rows())
    totals = aligned.group_by("rank").agg(pl.col("wait_ns").sum(), pl.col("transfer_ns").sum())
    per_rank = {r: (w, t) for r, w, t in totals.iter_rows()}
    alignments = tuple(
        RankAlignment(
            rank=r,
            offset_ns=offsets[r][0],
            residual_ns=offsets[r][1],
            wait_ns=per_rank.get(r, (0, 0))[0],
            transfer_ns=per_rank.get(r, (0, 0))[1],
            last_arrivals=last_counts.get(r, 0),
        )
        for r in ranks
    )
    straggler = max(last_counts, key=lambda r: last_counts[r]) if last_counts else None
    matches = aligned["match"].n_unique()
    return CrossRank(
        reference_rank=reference,
        matched=matches,
        unmatched=calls.height - matched.height,
        ranks=alignments,
        straggler=straggler,
        calls=aligned.drop("pg_key", "size_key", "order", "offset", "arrive", "last"),
    )


def step_skew(step_windows: pl.DataFrame) -> list[StepSkew]:
    """Per step present on two or more ranks: the spread of the ranks' step times."""
    span = step_windows.with_columns(length=pl.col("end_ns") - pl.col("start_ns"))
    out = []
    for (step,), rows in span.group_by("step", maintain_order=True):
        if rows.height < 2:
            continue
        slowest = rows.sort("length", descending=True).row(0, named=True)
        shortest = int(rows["length"].min())  # type: ignore[arg-type]
        out.append(
            StepSkew(
                step=int(step),
                shortest_ns=shortest,
                longest_ns=int(slowest["length"]),
                slowest_rank=int(slowest["rank"]),
            )
        )
    return sorted(out, key=lambda s: s.step)
