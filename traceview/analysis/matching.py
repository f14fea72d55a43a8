"""Matching collective calls across ranks: propose matches (by sequence numbers or order, or
by end times when the order disagrees), fit each rank's clock offset to them, and judge whether
they hold together (docs/commands/ranks.md)."""

from __future__ import annotations

import msgspec
import numpy as np
import polars as pl

from traceview.tables import device_lane

KEY = ["pg_key", "order"]
# Collectives whose message size may differ from rank to rank.
UNEVEN = ["all_to_all", "send_recv", "send", "recv", "gather", "scatter"]
# PyTorch numbers a group's point-to-point calls apart from its collectives: their `Seq` may be
# equal (Kineto's cross-rank "Comms Id" hashes the group, the number and which of the two).
POINT_TO_POINT = ["send", "recv", "send_recv"]
# Collectives no rank can finish before every rank has begun: these are the ones a match is
# checked on. (A broadcast's or reduce's root, or a point-to-point sender, may finish first.)
SYMMETRIC = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "barrier"]
# When a match holds (docs/commands/ranks.md), on the aligned clocks: no rank ends before the
# last one began, within 20 µs + 2 % of the shortest duration; and GPU kernels (which no
# scheduler delays) end together, within 50 µs + 10 % of the shortest duration.
CAUSAL_SLACK_NS, CAUSAL_SLACK_SHARE = 20_000, 0.02
ENDS_SLACK_NS, ENDS_SLACK_SHARE = 50_000, 0.10
# Matching by end times fits the clock offsets to the matches it finds: it needs this many.
MIN_END_TIME_MATCHES = 3
MAX_END_TIME_PAIRS = 2_000_000


def keyed_calls(calls: pl.DataFrame) -> pl.DataFrame:
    """Each call's key: its sequence number in its group where recorded (point-to-point and
    collective numbers apart: what Kineto's "Comms Id" hashes), else its order among
    the calls of the same type and size in its group and step (Gloo's two worker threads can
    start queued collectives a little out of order; same-sized ones are interchangeable)."""
    same = ["rank", "step", "pg_key", "collective", "size_key"]
    return calls.with_columns(
        pg_key=pl.col("pg").fill_null("default"),
        # Sizes differ across ranks for these: they cannot tell calls apart.
        size_key=pl.when(pl.col("collective").is_in(UNEVEN)).then(-1).otherwise(pl.col("bytes")),
        on_device=device_lane(pl.col("lane")),
    ).with_columns(
        order=pl.when(pl.col("seq").is_not_null())
        .then(
            pl.format(
                "{} {}",
                pl.when(pl.col("collective").is_in(POINT_TO_POINT))
                .then(pl.lit("p2p seq"))
                .otherwise(pl.lit("seq")),
                pl.col("seq"),
            )
        )
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
    width = _median(np.sort(slack))
    agree = np.searchsorted(order, order + width, "right") - np.searchsorted(
        order, order - width, "left"
    )
    center = order[int(np.argmax(agree))]
    inliers = np.abs(d - center) <= slack
    return _median(np.sort(d[inliers])), inliers


def _median(ordered: np.ndarray) -> float:
    """np.median of sorted values, without its overhead (most of the time of a 10,000-rank
    job's alignment, done once per rank)."""
    n = len(ordered)
    return float((ordered[(n - 1) // 2] + ordered[n // 2]) / 2)


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
    # Every rank's pairs in one join, sorted by rank and difference: every rank's offset in one
    # pass of numpy (a join per rank, then a pass per rank, cost most of a 10,240-rank job's
    # alignment).
    pairs = (
        basis.filter(pl.col("rank") != reference)
        .join(ref, on="match")
        .with_columns(d=pl.col("end_ns") - pl.col("ref_end"))
        .sort("rank", "d")
    )
    found = rank_offsets(
        pairs["rank"].to_numpy(),
        pairs["d"].to_numpy(),
        pairs["on_device"].to_numpy(),
        np.minimum(pairs["dur_ns"].to_numpy(), pairs["ref_dur"].to_numpy()),
    )
    # A rank with no pairs (no call of its matched one of the reference's) keeps offset 0.
    return {reference: 0.0, **{rank: found.get(rank, 0.0) for rank in ranks[1:]}}


# Keys of the ranks' differences side by side: each rank's within a stretch of its own this wide
# (2^40 ns, 18 minutes); a rank whose differences spread wider is measured alone.
_STRETCH = 1 << 40


def rank_offsets(
    rank: np.ndarray, d: np.ndarray, device: np.ndarray, shortest: np.ndarray
) -> dict[int, float]:
    """Each rank's offset from its pairs (rows sorted by rank, then difference `d`, in ns):
    GPU kernels, which end together, by the consensus of their differences (_consensus); CPU
    spans, which end as the scheduler lets them, by their median. Every rank at once."""
    if rank.size == 0:
        return {}
    present, first, counts = np.unique(rank, return_index=True, return_counts=True)
    seg = np.repeat(np.arange(present.size), counts)
    slack = np.asarray(_ends_slack(shortest), dtype=float)
    d_float = d.astype(float)
    # Each rank's width: the median of its slacks (sorted within the rank).
    by_slack = np.lexsort((slack, seg))
    width = _segment_medians(slack[by_slack], first, counts)
    reach = np.floor(width).astype(np.int64)[seg]  # ints within d + width: within d + ⌊width⌋
    base = d - d[first][seg]
    spread = base[first + counts - 1]
    alone = spread + np.floor(width) >= _STRETCH // 2
    key = seg.astype(np.int64) * _STRETCH + np.minimum(base, _STRETCH // 2)
    agree = np.searchsorted(key, key + reach, "right") - np.searchsorted(key, key - reach, "left")
    most = np.maximum.reduceat(agree, first)
    at = np.minimum.reduceat(np.where(agree == most[seg], np.arange(d.size), d.size), first)
    inliers = np.abs(d_float - d_float[at][seg]) <= slack
    kept = np.bincount(seg[inliers], minlength=present.size)
    kept_first = np.concatenate(([0], np.cumsum(kept)[:-1]))
    consensus = _segment_medians(d_float[inliers], kept_first, kept)
    on_device = np.logical_and.reduceat(device.astype(bool), first)
    offsets = np.where(on_device, consensus, _segment_medians(d_float, first, counts))
    out = dict(zip(present.tolist(), offsets.tolist(), strict=True))
    for s in np.flatnonzero(alone & on_device).tolist():  # too wide for the shared keys
        lo, hi = int(first[s]), int(first[s] + counts[s])
        out[int(present[s])] = _consensus(d_float[lo:hi], slack[lo:hi])[0]
    return out


def _segment_medians(values: np.ndarray, first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The median of each segment of `values` (sorted within each), as _median gives it."""
    return (values[first + (counts - 1) // 2] + values[first + counts // 2]) / 2  # type: ignore[no-any-return]


class Judged(msgspec.Struct, frozen=True):
    calls: pl.DataFrame  # matched calls on aligned clocks, + `holds` per match (null: not judged)
    offsets: dict[int, float]
    judged: int  # symmetric matches, the ones that can be checked
    held: int
    end_spread_ns: float | None  # median over judged matches
    duration_ns: float | None  # median duration of the judged calls

    @property
    def holds(self) -> bool:
        return self.judged == 0 or 2 * self.held > self.judged


def judge(matched: pl.DataFrame, ranks: list[int], shared_clock: bool) -> Judged:
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
    return Judged(
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
