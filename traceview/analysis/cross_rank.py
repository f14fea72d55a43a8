"""Across the ranks of one job: match each collective call between ranks, put the ranks' clocks
on one, check that the matches hold together, and split each call into waiting for the last rank
to arrive and the transfer after it. A job whose matches do not hold is reported not aligned,
with the reason, and gets no offsets, wait, transfer or straggler."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

KEY = ["pg_key", "order"]
# Collectives whose message size may differ from rank to rank.
UNEVEN = ["all_to_all", "send_recv", "send", "recv", "gather", "scatter"]
# Collectives no rank can finish before every rank has begun: these are the ones a match is
# checked on. (A broadcast's or reduce's root, or a point-to-point sender, may finish first.)
SYMMETRIC = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "barrier"]
# When a match holds (README "Across ranks"), on the aligned clocks: no rank ends before the
# last one began, within 20 µs + 2 % of the shortest duration; and GPU kernels (which no
# scheduler delays) end together, within 50 µs + 10 % of the shortest duration.
CAUSAL_SLACK_NS, CAUSAL_SLACK_SHARE = 20_000, 0.02
ENDS_SLACK_NS, ENDS_SLACK_SHARE = 50_000, 0.10
# Matching by end times fits the clock offsets to the matches it finds: it needs this many.
MIN_END_TIME_MATCHES = 3
MAX_END_TIME_PAIRS = 2_000_000


@dataclass(frozen=True, kw_only=True)
class RankAlignment:
    rank: int
    offset_ns: float  # subtract from this rank's times to put them on the reference clock
    residual_ns: float  # median |end - offset - reference end| over kept matches
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
    aligned: bool  # the matches hold together: offsets, wait/transfer and straggler are given
    reason: str | None  # why not aligned; or, when aligned, what the reader should know
    matched_by: str  # "sequence numbers", "order", "sequence numbers and order", "end times"
    candidates: int  # matches proposed (collective calls found on every rank)
    matched: int  # matches kept
    rejected: int  # proposed matches that did not hold together
    unmatched: int  # calls of some rank in no kept match
    ranks: tuple[RankAlignment, ...]  # empty when not aligned
    straggler: int | None  # the rank that arrives last most often
    calls: pl.DataFrame  # every kept match per rank, aligned: + wait_ns, transfer_ns, match

    def of(self, rank: int) -> RankAlignment:
        return next(r for r in self.ranks if r.rank == rank)


def _keyed(calls: pl.DataFrame) -> pl.DataFrame:
    """Each call's key: its sequence number in its group where recorded, else its order among
    the calls of the same type and size in its group and step (Gloo's two worker threads can
    start queued collectives a little out of order; same-sized ones are interchangeable)."""
    same = ["rank", "step", "pg_key", "collective", "size_key"]
    return calls.with_columns(
        pg_key=pl.col("pg").fill_null("default"),
        # Sizes differ across ranks for these: they cannot tell calls apart.
        size_key=pl.when(pl.col("collective").is_in(UNEVEN)).then(-1).otherwise(pl.col("bytes")),
        on_device=pl.col("lane").str.starts_with("stream"),
    ).with_columns(
        order=pl.when(pl.col("seq").is_not_null())
        .then(pl.format("seq {}", pl.col("seq")))
        .otherwise(
            pl.format(
                "{}/{}/{}/{}",
                pl.col("step").fill_null(-1),
                pl.col("collective").fill_null("?"),
                pl.col("size_key").fill_null(-1),
                pl.int_range(pl.len()).over(same, order_by="start_ns"),
            )
        )
    )


def match_by_keys(keyed: pl.DataFrame, ranks: int) -> pl.DataFrame:
    """Keys present on every rank once, with the same collective type (and size, where every
    rank sends the same): one `match` id each."""
    agreed = keyed.group_by(KEY).agg(
        n=pl.len(),
        ranks=pl.col("rank").n_unique(),
        kinds=pl.col("collective").n_unique(),
        sizes=pl.col("bytes").n_unique(),
        uneven=pl.col("collective").is_in(UNEVEN).any(),
    )
    good = agreed.filter(
        (pl.col("n") == ranks)
        & (pl.col("ranks") == ranks)
        & (pl.col("kinds") == 1)
        & ((pl.col("sizes") <= 1) | pl.col("uneven"))
    )
    return keyed.join(good.select(KEY).sort(KEY).with_row_index("match"), on=KEY, how="inner")


def _ends_slack(shortest_ns: pl.Expr | np.ndarray) -> pl.Expr | np.ndarray:
    return ENDS_SLACK_NS + ENDS_SLACK_SHARE * shortest_ns


def _consensus(d: np.ndarray, slack: np.ndarray) -> tuple[float, np.ndarray]:
    """The offset most differences agree on (each within its own slack), and which agree: a
    few wrong matches cannot pull it, as they would a mean or, past half, a median."""
    order = np.sort(d)
    width = float(np.median(slack))
    agree = np.searchsorted(order, order + width, "right") - np.searchsorted(
        order, order - width, "left"
    )
    center = order[int(np.argmax(agree))]
    inliers = np.abs(d - center) <= slack
    return float(np.median(d[inliers])), inliers


def _offsets(matched: pl.DataFrame, ranks: list[int], shared_clock: bool) -> dict[int, float]:
    """Per rank, what to subtract to reach the reference rank's clock, from the ends of the
    matched calls (the symmetric ones where there are any). One host: one clock, nothing."""
    if shared_clock:
        return dict.fromkeys(ranks, 0.0)
    reference = ranks[0]
    basis = matched.filter(pl.col("collective").is_in(SYMMETRIC))
    basis = basis if basis.height else matched
    ref = basis.filter(pl.col("rank") == reference).select(
        "match", ref_end="end_ns", ref_dur="dur_ns"
    )
    out = {reference: 0.0}
    for rank in ranks[1:]:
        pairs = basis.filter(pl.col("rank") == rank).join(ref, on="match")
        if pairs.height == 0:
            out[rank] = 0.0
            continue
        d = (pairs["end_ns"] - pairs["ref_end"]).cast(pl.Float64).to_numpy()
        if pairs["on_device"].all():
            shortest = np.minimum(pairs["dur_ns"].to_numpy(), pairs["ref_dur"].to_numpy())
            out[rank] = _consensus(d, np.asarray(_ends_slack(shortest), dtype=float))[0]
        else:  # CPU spans end as the scheduler lets them: no tighter agreement to look for
            out[rank] = float(np.median(d))
    return out


@dataclass(frozen=True)
class _Judged:
    calls: pl.DataFrame  # matched calls on aligned clocks, + `holds` per match (null: not judged)
    offsets: dict[int, float]
    judged: int  # symmetric matches, the ones that can be checked
    held: int
    end_spread_ns: float | None  # median over judged matches
    duration_ns: float | None  # median duration of the judged calls

    @property
    def holds(self) -> bool:
        return self.judged == 0 or 2 * self.held > self.judged


def _judge(matched: pl.DataFrame, ranks: list[int], shared_clock: bool) -> _Judged:
    offsets = _offsets(matched, ranks, shared_clock)
    off = pl.DataFrame(
        {"rank": ranks, "offset": [offsets[r] for r in ranks]},
        schema={"rank": pl.Int32, "offset": pl.Float64},
    )
    aligned = matched.join(off, on="rank").with_columns(
        arrive=pl.col("start_ns") - pl.col("offset"), leave=pl.col("end_ns") - pl.col("offset")
    )
    per_match = aligned.group_by("match").agg(
        symmetric=pl.col("collective").first().is_in(SYMMETRIC),
        device=pl.col("on_device").all(),
        last_in=pl.col("arrive").max(),
        first_out=pl.col("leave").min(),
        last_out=pl.col("leave").max(),
        shortest=pl.col("dur_ns").min(),
    )
    causal = pl.col("first_out") >= pl.col("last_in") - (
        CAUSAL_SLACK_NS + CAUSAL_SLACK_SHARE * pl.col("shortest")
    )
    together = ~pl.col("device") | (
        pl.col("last_out") - pl.col("first_out") <= _ends_slack(pl.col("shortest"))
    )
    per_match = per_match.with_columns(
        holds=pl.when(pl.col("symmetric")).then(causal & together),
        spread=pl.col("last_out") - pl.col("first_out"),
    )
    judged = per_match.filter(pl.col("symmetric"))
    durations = aligned.filter(pl.col("collective").is_in(SYMMETRIC))["dur_ns"]
    return _Judged(
        calls=aligned.join(per_match.select("match", "holds"), on="match"),
        offsets=offsets,
        judged=judged.height,
        held=int(judged["holds"].sum()),
        end_spread_ns=float(judged["spread"].median()) if judged.height else None,  # type: ignore[arg-type]
        duration_ns=float(durations.median()) if durations.len() else None,  # type: ignore[arg-type]
    )


def match_by_end_times(keyed: pl.DataFrame, ranks: list[int], shared_clock: bool) -> pl.DataFrame:
    """For GPU kernels whose keys disagree (a trace missing some calls): pair each reference
    call with the call of the same group, type, step (and size, where every rank sends the same)
    on each other rank whose end, on the clock most pairs agree on, is nearest and close
    enough (ENDS_SLACK); one partner per call."""
    reference = ranks[0]
    on = ["pg_key", "collective", "_step"]
    ref = keyed.filter(pl.col("rank") == reference).with_columns(_step=pl.col("step").fill_null(-1))
    partners: list[pl.DataFrame] = []
    for rank in ranks[1:]:
        mine = keyed.filter(pl.col("rank") == rank).with_columns(_step=pl.col("step").fill_null(-1))
        count = ref.group_by(on).len().join(mine.group_by(on).len(), on=on)
        if int((count["len"] * count["len_right"]).sum()) > MAX_END_TIME_PAIRS:
            return keyed.clear().with_columns(match=pl.lit(0, pl.UInt32))  # too many to weigh
        pairs = ref.select(*on, "index", "size_key", "end_ns", "dur_ns").join(
            mine.select(*on, "index", "size_key", "end_ns", "dur_ns"), on=on, suffix="_r"
        )
        pairs = pairs.filter(
            pl.col("size_key").is_null()
            | pl.col("size_key_r").is_null()
            | (pl.col("size_key") == pl.col("size_key_r"))
        ).with_columns(
            d=(pl.col("end_ns_r") - pl.col("end_ns")).cast(pl.Float64),
            slack=_ends_slack(pl.min_horizontal("dur_ns", "dur_ns_r")),  # type: ignore[arg-type]
        )
        if pairs.height == 0:
            return keyed.clear().with_columns(match=pl.lit(0, pl.UInt32))
        d, slack = pairs["d"].to_numpy(), pairs["slack"].to_numpy()
        offset = 0.0 if shared_clock else _consensus(d, slack)[0]
        close = pairs.with_columns(miss=(pl.col("d") - offset).abs()).filter(
            pl.col("miss") <= pl.col("slack")
        )
        taken_ref: set[int] = set()
        taken_mine: set[int] = set()
        found = []
        for a, b in close.sort("miss").select("index", "index_r").iter_rows():
            if a not in taken_ref and b not in taken_mine:
                taken_ref.add(a)
                taken_mine.add(b)
                found.append((a, b))
        partners.append(
            pl.DataFrame(found, schema={"index": pl.Int64, f"on_{rank}": pl.Int64}, orient="row")
        )
    everywhere = partners[0]
    for more in partners[1:]:
        everywhere = everywhere.join(more, on="index")
    everywhere = everywhere.sort("index").with_row_index("match")
    rows = [everywhere.select("match", pl.col("index"), rank=pl.lit(reference, pl.Int32))]
    rows += [
        everywhere.select("match", index=pl.col(f"on_{rank}"), rank=pl.lit(rank, pl.Int32))
        for rank in ranks[1:]
    ]
    return keyed.join(pl.concat(rows), on=["rank", "index"], how="inner")


def _method(matched: pl.DataFrame) -> str:
    with_seq = matched["seq"].is_not_null()
    if with_seq.all():
        return "sequence numbers"
    return "order" if not with_seq.any() else "sequence numbers and order"


def _why_not(j: _Judged, candidates: int) -> str:
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
    keyed = _keyed(calls.filter(pl.col("rank").is_not_null()))
    matched = match_by_keys(keyed, len(ranks))
    candidates = int(matched["match"].n_unique()) if matched.height else 0
    judged = _judge(matched, ranks, shared_clock)
    method, note = _method(matched) if matched.height else "order", None
    # GPU kernels end together, which pairs calls on their own: where the keys are the calls'
    # order (which a trace missing calls shifts) and some calls found no partner or no match,
    # keep whichever pairing more matches hold in.
    troubled = judged.held < judged.judged or matched.height < keyed.height
    if not judged.holds or candidates == 0 or (method != "sequence numbers" and troubled):
        by_ends = match_by_end_times(keyed, ranks, shared_clock)
        if by_ends.height and by_ends["on_device"].all():
            again = _judge(by_ends, ranks, shared_clock)
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
            offset_ns=offsets[r],
            residual_ns=float(residuals.get(r) or 0.0),
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
        aligned=True,
        reason=note,
        matched_by=method,
        candidates=candidates,
        matched=matches,
        rejected=rejected,
        unmatched=total_calls - aligned.height,
        ranks=alignments,
        straggler=straggler,
        calls=aligned.drop(
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
