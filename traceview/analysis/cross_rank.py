"""Across the ranks of one job: match each collective call between ranks, put the ranks' clocks
on one, check that the matches hold together, and split each call into waiting for the last rank
to arrive and the transfer after it. A job whose matches do not hold is reported not aligned,
with the reason, and gets no offsets, wait, transfer or straggler."""

from __future__ import annotations

import msgspec
import polars as pl

from traceview.analysis.matching import (
    MIN_END_TIME_MATCHES,
    SYMMETRIC,
    Judged,
    judge,
    keyed_calls,
    match_by_end_times,
    match_by_keys,
)


class RankAlignment(msgspec.Struct, frozen=True, kw_only=True):
    rank: int
    offset_ns: float  # subtract from this rank's times to put them on the reference clock
    residual_ns: float  # median |end - offset - reference end| over kept matches
    wait_ns: int  # time in collectives waiting for the last rank to arrive
    transfer_ns: int  # time in collectives after every rank had arrived
    last_arrivals: int  # matched collectives this rank arrived at last
    # the other ranks' wait at the matched collectives this rank arrived at last: what its
    # lateness cost them
    caused_wait_ns: int = 0


class StepSkew(msgspec.Struct, frozen=True, kw_only=True):
    step: int
    shortest_ns: int
    longest_ns: int
    slowest_rank: int

    @property
    def skew_ns(self) -> int:
        return self.longest_ns - self.shortest_ns


class CrossRank(msgspec.Struct, frozen=True, kw_only=True):
    reference_rank: int
    aligned: bool  # the matches hold together: offsets, wait/transfer and straggler are given
    reason: str | None  # why not aligned; or, when aligned, what the reader should know
    matched_by: str  # "sequence numbers", "order", "sequence numbers and order", "end times"
    candidates: int  # matches proposed (collective calls found on every rank)
    matched: int  # matches kept
    rejected: int  # proposed matches that did not hold together
    unmatched: int  # calls of some rank in no kept match
    ranks: tuple[RankAlignment, ...]  # empty when not aligned
    # the rank whose late arrivals cost the others the most waiting (RankAlignment's
    # caused_wait_ns); None when none caused any, or two tie
    straggler: int | None
    # every kept match per rank, aligned: + wait_ns, transfer_ns, match, last_rank (who arrived
    # last at that match)
    calls: pl.DataFrame

    def of(self, rank: int) -> RankAlignment:
        return next(r for r in self.ranks if r.rank == rank)


def _method(matched: pl.DataFrame) -> str:
    with_seq = matched["seq"].is_not_null()
    if with_seq.all():
        return "sequence numbers"
    return "order" if not with_seq.any() else "sequence numbers and order"


def _why_not(j: Judged, candidates: int) -> str:
    if candidates == 0:
        return "no collective call was found on every rank with the same type and size"
    spread = f"{(j.end_spread_ns or 0) / 1e6:,.3f} ms"
    duration = f"{(j.duration_ns or 0) / 1e6:,.3f} ms"
    return (
        f"{j.judged - j.held} of {j.judged} matched all-reduce/all-gather/reduce-scatter/"
        f"all-to-all calls do not hold together on any common clock (ends {spread} apart at the "
        f"median, for calls of {duration}): the calls could not be matched across ranks"
    )


def align(calls: pl.DataFrame, shared_clock: bool = False) -> CrossRank | None:
    """calls: the collective-call rows of every rank (rank, step, pg, seq, lane, start_ns,
    end_ns, ...). With `shared_clock` (every trace from one host) the clocks are already one and
    no offset is estimated. None below two ranks."""
    ranks = sorted(calls["rank"].drop_nulls().unique().to_list())
    if len(ranks) < 2:
        return None
    keyed = keyed_calls(calls.filter(pl.col("rank").is_not_null()))
    matched = match_by_keys(keyed, len(ranks))
    candidates = int(matched["match"].n_unique()) if matched.height else 0
    judged = judge(matched, ranks, shared_clock)
    method, note = _method(matched) if matched.height else "order", None
    # GPU kernels end together, which pairs calls on their own: where the keys are the calls'
    # order (which a trace missing calls shifts) and some calls found no partner or no match,
    # keep whichever pairing more matches hold in.
    troubled = judged.held < judged.judged or matched.height < keyed.height
    if not judged.holds or candidates == 0 or (method != "sequence numbers" and troubled):
        by_ends = match_by_end_times(keyed, ranks, shared_clock)
        if by_ends.height and by_ends["on_device"].all():
            again = judge(by_ends, ranks, shared_clock)
            enough = shared_clock or again.held >= MIN_END_TIME_MATCHES
            better = again.held > judged.held or not judged.holds or candidates == 0
            if again.holds and again.judged and enough and better:
                note = (
                    "the calls' order disagrees across ranks (a trace may be missing calls): "
                    f"matched by end times, where {again.held} matches hold against "
                    f"{judged.held} of {judged.judged} by order"
                    if candidates
                    else "no call was found on every rank by order: matched by end times"
                )
                matched, judged, method = by_ends, again, "end times"
                candidates = int(by_ends["match"].n_unique())
    failed = judged.judged - judged.held
    if not judged.holds or matched.height == 0:
        return CrossRank(
            reference_rank=ranks[0],
            aligned=False,
            reason=_why_not(judged, candidates),
            matched_by=method,
            candidates=candidates,
            matched=0,
            rejected=failed,
            unmatched=calls.height,
            ranks=(),
            straggler=None,
            calls=calls.clear(),
        )
    if judged.judged == 0:
        note = (
            "only broadcast, reduce or point-to-point calls were matched: their ranks need not "
            "end together, so the matches could not be checked"
        )
    kept = judged.calls.filter(pl.col("holds").is_null() | pl.col("holds"))
    return _split(kept, ranks, judged.offsets, method, note, candidates, failed, calls.height)


def _split(
    kept: pl.DataFrame,
    ranks: list[int],
    offsets: dict[int, float],
    method: str,
    note: str | None,
    candidates: int,
    rejected: int,
    total_calls: int,
) -> CrossRank:
    """Wait (until the last rank arrived) and transfer (after) per kept call; per rank totals,
    residuals and last arrivals; the straggler."""
    aligned = (
        kept.with_columns(last=pl.col("arrive").max().over("match"))
        .with_columns(
            wait_ns=(pl.col("last") - pl.col("arrive"))
            .clip(0, pl.col("dur_ns"))
            .round()
            .cast(pl.Int64),
        )
        .with_columns(transfer_ns=pl.col("dur_ns") - pl.col("wait_ns"))
    )
    reference = ranks[0]
    basis = aligned.filter(pl.col("collective").is_in(SYMMETRIC))
    basis = basis if basis.height else aligned
    ref_leave = basis.filter(pl.col("rank") == reference).select("match", ref="leave")
    residual = (
        basis.join(ref_leave, on="match")
        .group_by("rank")
        .agg(residual=(pl.col("leave") - pl.col("ref")).abs().median())
    )
    residuals = dict(residual.iter_rows())
    last = (
        aligned.sort("arrive", "rank", descending=True)  # equal arrivals: the higher rank, always
        .group_by("match")
        .agg(last_rank=pl.col("rank").first())
    )
    last_counts = dict(last.group_by("last_rank").len().iter_rows())
    # The last rank's own wait is 0: a match's wait is the others' wait for its last rank.
    caused = dict(
        aligned.join(last, on="match")
        .group_by("last_rank")
        .agg(pl.col("wait_ns").sum())
        .iter_rows()
    )
    totals = aligned.group_by("rank").agg(pl.col("wait_ns").sum(), pl.col("transfer_ns").sum())
    per_rank = {r: (w, t) for r, w, t in totals.iter_rows()}
    alignments = tuple(
        RankAlignment(
            rank=r,
            offset_ns=offsets[r],
            residual_ns=float(residuals.get(r) or 0.0),
            wait_ns=per_rank.get(r, (0, 0))[0],
            transfer_ns=per_rank.get(r, (0, 0))[1],
            last_arrivals=last_counts.get(r, 0),
            caused_wait_ns=caused.get(r, 0),
        )
        for r in ranks
    )
    straggler = _costliest(caused)
    matches = aligned["match"].n_unique()
    return CrossRank(
        reference_rank=reference,
        aligned=True,
        reason=note,
        matched_by=method,
        candidates=candidates,
        matched=matches,
        rejected=rejected,
        unmatched=total_calls - aligned.height,
        ranks=alignments,
        straggler=straggler,
        calls=aligned.join(last, on="match", how="left").drop(
            "pg_key", "size_key", "order", "offset", "arrive", "leave", "last", "holds", "on_device"
        ),
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


def _costliest(caused: dict[int, int]) -> int | None:
    """The rank whose late arrivals cost the others more waiting than any other's; None when
    nobody waited or two or more tie (no rank stands out, and which one a table happened to
    list first must not decide). How often a rank arrives last is another measure: a rank
    last by a hair at many calls costs less than one late by milliseconds at a few."""
    most = max(caused.values(), default=0)
    if most <= 0:
        return None
    leaders = [r for r, w in caused.items() if w == most]
    return leaders[0] if len(leaders) == 1 else None
