"""The walk behind the critical path (analysis/critical_path.py), on whole columns: each piece
of work's predecessor is found for every piece at once (two sorted searches), so following the
path is one pointer chase per step, and its segments are cut and merged as columns. Times are
on the aligned clock."""

from __future__ import annotations

import numpy as np
import polars as pl

from traceview.analysis.path_resume import resumed_by_collectives

# Work on the lane the path is on (a GPU stream, a host thread) runs in order: its own previous
# work is taken as the cause unless another lane's ended more than this much later.
SAME_LANE_SLACK_NS = 1_000
NO_LAUNCH = np.iinfo(np.int64).min
# The sort keys (group, lane, time since the group's start) stay below this: int64 with room.
KEY_LIMIT = 2**60
KINDS = ("compute", "comm", "memory")
# Steps' chains are chased side by side, a round of numpy steps for a piece of each, while more
# than this many are on their way; fewer, one piece at a time. A round costs ~6 µs, a piece
# alone ~0.4 µs: side by side pays from ~16 steps on (a trace of 200,000 short steps: 3 ms
# against 53; of 608 long ones: 20 against 67).
CHASED_TOGETHER_ABOVE = 32
_COMPUTE, _COMM, _MEMORY = range(3)

# work: how many pieces of work a segment merges; top_work: the name of the kernel, op or call
# that takes most of its time (None for gaps).
SEGMENTS_SCHEMA = {
    "step": pl.Int64, "rank": pl.Int32, "category": pl.String, "start_ns": pl.Int64,
    "end_ns": pl.Int64, "work": pl.Int64, "collective": pl.String, "top_work": pl.String,
}  # fmt: skip


def walk(rows: pl.DataFrame, windows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """rows: every rank's work of the steps walked (step, rank, lane, kind, name, start, end,
    launch, collective, arrive, last_rank: the match's last arrival and who, null where
    unmatched; host: a CPU-only rank's row);
    windows: per step and rank its start and end. Returns (segments in time order, per step
    its start_ns, end_ns and crossings)."""
    rows = rows.filter(pl.col("end") > pl.col("start")).sort("step", "rank", "end", "start")
    n = rows.height
    step, rank = rows["step"].to_numpy(), rows["rank"].to_numpy()
    start, end = rows["start"].to_numpy(), rows["end"].to_numpy()
    lane = rows["lane"].cast(pl.Categorical).to_physical().cast(pl.Int64).to_numpy()
    kind = rows["kind"].replace_strict(KINDS, list(range(3)), return_dtype=pl.Int8).to_numpy()
    launch = rows["launch"].fill_null(NO_LAUNCH).to_numpy()
    arrive = rows["arrive"].fill_null(NO_LAUNCH).to_numpy()
    last = rows["last_rank"].fill_null(-1).to_numpy()
    gid = _group_ids(step, rank)
    # The last rank's call of the same match and step, where the path can cross to it.
    theirs = _their_call(rows, n)
    matched = arrive != NO_LAUNCH
    late = matched & (last != rank) & (start < arrive) & (arrive < end)
    crossing = late & (theirs >= 0)
    waiting = late & (theirs < 0)
    via = np.where(crossing, theirs, np.arange(n))  # the work the path enters this one by
    entry_time = np.where(crossing, arrive, start)
    pred = _predecessors(gid[via], lane[via], entry_time, gid, lane, start, end)
    host = rows["host"].to_numpy()
    if host.any():
        resumed_by_collectives(pred, host & (kind == _COMM), host & (via == np.arange(n)),
                               gid, lane, start, end)  # fmt: skip

    spans = (
        windows.group_by("step")
        .agg(
            begin=pl.col("start_ns").min(),
            finish=pl.col("end_ns").max(),
            # where the path begins: the rank that ended last (the lowest of those tied)
            first_rank=pl.col("rank").sort_by(["end_ns", "rank"], descending=[True, False]).first(),
        )
        .sort("step")
    )
    firsts = _last_work_before(spans, step, rank, gid, lane, start, end)
    on_path, at = _chase(firsts, spans["begin"].to_numpy(), pred, end)
    per_step = np.repeat(np.arange(len(at)), at)
    crossings = np.bincount(per_step, weights=crossing[on_path], minlength=len(at))
    steps = spans.select(
        "step", start_ns="begin", end_ns="finish", crossings=pl.Series(crossings, dtype=pl.Int64)
    )
    pieces = _pieces(
        rows, spans, on_path, at,
        dict(start=start, end=end, kind=kind, via=via, entry_time=entry_time,
             entry_launch=launch[via], arrive=arrive, crossing=crossing, waiting=waiting,
             rank=rank, matched=matched),
    )  # fmt: skip
    return _merged(pieces), steps


def _group_ids(step: np.ndarray, rank: np.ndarray) -> np.ndarray:
    new = np.ones(step.size, dtype=bool)
    new[1:] = (step[1:] != step[:-1]) | (rank[1:] != rank[:-1])
    return np.cumsum(new) - 1


def _their_call(rows: pl.DataFrame, n: int) -> np.ndarray:
    """Per row: the row of the same match's call on its last rank, in the same step; -1."""
    calls = rows.with_row_index("i").filter(pl.col("match").is_not_null())
    if calls.height == 0:
        return np.full(n, -1, dtype=np.int64)
    last = (
        calls.filter(pl.col("rank") == pl.col("last_rank"))
        .select("match", "step", theirs=pl.col("i").cast(pl.Int64))
        .unique(["match", "step"], keep="first")
    )
    found = calls.join(last, on=["match", "step"], how="left").select("i", "theirs")
    out = np.full(n, -1, dtype=np.int64)
    out[found["i"].to_numpy()] = found["theirs"].fill_null(-1).to_numpy()
    return out


def _predecessors(
    q_gid: np.ndarray, q_lane: np.ndarray, q_time: np.ndarray,
    gid: np.ndarray, lane: np.ndarray, start: np.ndarray, end: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Per query (group, lane, time): the work of the group that ended last at or before the
    time; the lane's own where it ended within SAME_LANE_SLACK_NS of that; -1 where none. The
    rows are sorted by group, then end: one key, gid × span + (end − the group's first start),
    orders them all, so every query is one binary search — over as many groups at a time as
    such keys fit in 60 bits."""
    out = np.full(q_gid.size, -1, dtype=np.int64)
    if gid.size == 0:
        return out
    groups = int(gid[-1]) + 1
    lanes = int(lane.max()) + 1  # lane codes: 0, 1, ...
    base = np.full(groups, np.iinfo(np.int64).max)
    np.minimum.at(base, gid, start)
    span = int((end - base[gid]).max()) + 2
    at_once = max(1, KEY_LIMIT // (lanes * span))
    bounds = np.searchsorted(gid, np.arange(0, groups + at_once, at_once))
    for first, (lo, hi) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)):
        g0 = first * at_once
        asked = np.flatnonzero((q_gid >= g0) & (q_gid < g0 + at_once))
        if asked.size == 0 or lo == hi:
            continue
        found = _search(
            q_gid[asked] - g0, q_lane[asked], q_time[asked] - base[q_gid[asked]],
            gid[lo:hi] - g0, lane[lo:hi], end[lo:hi] - base[gid[lo:hi]], lanes, span,
        )  # fmt: skip
        out[asked] = np.where(found >= 0, found + lo, -1)
    return out


def _search(
    q_gid: np.ndarray, q_lane: np.ndarray, q_since: np.ndarray,
    gid: np.ndarray, lane: np.ndarray, since: np.ndarray, lanes: int, span: int,
) -> np.ndarray:  # fmt: skip
    """`_predecessors` for groups whose keys fit: times as offsets from each group's start."""
    q_since = np.clip(q_since, -1, span - 1)
    key = gid * span + since
    k = np.searchsorted(key, q_gid * span + q_since, side="right") - 1
    kk = np.maximum(k, 0)
    best = np.where((k >= 0) & (gid[kk] == q_gid) & (since[kk] <= q_since), k, -1)
    # The same within (group, lane): one int per pair; a stable sort by it keeps each pair's
    # rows in end order.
    pair = gid * lanes + lane
    order = np.argsort(pair, kind="stable")
    q_pair = q_gid * lanes + q_lane
    j = np.searchsorted(pair[order] * span + since[order], q_pair * span + q_since, "right") - 1
    jj = order[np.maximum(j, 0)]
    own = (q_lane >= 0) & (j >= 0) & (pair[jj] == q_pair) & (since[jj] <= q_since)
    bb = np.maximum(best, 0)
    prefer = own & (best >= 0) & (since[jj] >= since[bb] - SAME_LANE_SLACK_NS)
    return np.where(prefer, jj, best)


def _last_work_before(
    spans: pl.DataFrame, step: np.ndarray, rank: np.ndarray, gid: np.ndarray,
    lane: np.ndarray, start: np.ndarray, end: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Per step: the work of its first rank that ended last by the step's end; -1 if none."""
    groups = pl.DataFrame({"step": step, "first_rank": rank, "gid": gid}).unique(
        ["step", "first_rank"]
    )
    asked = spans.select("step", "finish", "first_rank").join(
        groups, on=["step", "first_rank"], how="left", maintain_order="left"
    )
    found = asked["gid"].is_not_null().to_numpy()
    out = np.full(spans.height, -1, dtype=np.int64)
    if found.any():
        q_gid = asked["gid"].to_numpy()[found].astype(np.int64)
        q_time = asked["finish"].to_numpy()[found]
        no_lane = np.full(q_gid.size, -1, dtype=np.int64)
        out[found] = _predecessors(q_gid, no_lane, q_time, gid, lane, start, end)
    return out


def _chase(
    firsts: np.ndarray, begins: np.ndarray, pred: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each step's chain of work, last first: from its first piece through the predecessors,
    while the work ends after the step's start; the steps' chains one after another, and each
    one's length. The steps are chased side by side, a piece of each at a time, while more than
    CHASED_TOGETHER_ABOVE are on their way; the last few chains one piece at a time (a numpy
    step per piece would cost more)."""
    begin = np.asarray(begins, dtype=np.int64)
    at = np.array(firsts, dtype=np.int64)  # each step's next piece

    def on_path(steps: np.ndarray, pieces: np.ndarray) -> np.ndarray:
        ok = pieces >= 0
        ok[ok] = end[pieces[ok]] > begin[steps[ok]]
        return ok

    live = np.flatnonzero(on_path(np.arange(at.size), at))
    rounds: list[tuple[np.ndarray, np.ndarray]] = []  # (steps, their pieces), a round each
    while live.size > CHASED_TOGETHER_ABOVE:
        pieces = at[live]
        rounds.append((live, pieces))
        at[live] = pred[pieces]
        live = live[on_path(live, at[live])]
    lengths = np.zeros(at.size, dtype=np.int64)
    for steps, _ in rounds:
        lengths[steps] += 1
    rest: list[tuple[int, int, int]] = []  # (step, place in its chain, piece)
    if live.size:  # each still on its way was in every round
        pred_of, end_of = pred.tolist(), end.tolist()
        for s in live.tolist():
            i, b, k = int(at[s]), int(begin[s]), len(rounds)
            while i >= 0 and end_of[i] > b:
                rest.append((s, k, i))
                i, k = pred_of[i], k + 1
            lengths[s] = k
    first = np.cumsum(lengths) - lengths
    chained = np.empty(int(lengths.sum()), dtype=np.int64)
    for place, (steps, pieces) in enumerate(rounds):
        chained[first[steps] + place] = pieces
    if rest:
        s_, k_, i_ = np.array(rest, dtype=np.int64).T
        chained[first[s_] + k_] = i_
    return chained, lengths


def _pieces(
    rows: pl.DataFrame,
    spans: pl.DataFrame,
    node: np.ndarray,
    lengths: np.ndarray,
    col: dict[str, np.ndarray],
) -> pl.DataFrame:
    """The path's pieces: each piece of work on it (a crossing call: its transfer; a call whose
    last rank's is in another step: its transfer and its waiting), the gap after each, and the
    gap from the step's start to the earliest (`node`: the steps' chains one after another,
    `lengths` long)."""
    count = np.asarray(lengths, dtype=np.int64)
    begins, finish = spans["begin"].to_numpy(), spans["finish"].to_numpy()
    first = np.zeros(node.size, dtype=bool)
    first[(np.cumsum(count) - count)[count > 0]] = True
    # What comes after each piece on the path: the previous in the chain, or the step's end.
    after_time = np.where(first, np.repeat(finish, count), np.roll(col["entry_time"][node], 1))
    after_launch = np.where(first, NO_LAUNCH, np.roll(col["entry_launch"][node], 1))
    step, rank = np.repeat(spans["step"].to_numpy(), count), col["rank"][node]
    kind = col["kind"][node]
    # A collective a CPU thread resumed from before its span ended is on the path up to then.
    e = np.minimum(col["end"][node], after_time)
    s = np.maximum(col["start"][node], np.repeat(begins, count))
    collective = rows["collective"].gather(node)
    names = rows["name"].cast(pl.String).gather(node)

    def frame(mask, category, lo, hi, work, named):  # type: ignore[no-untyped-def]
        named_as = _gap_names(category[mask]) if isinstance(category, np.ndarray) else category
        kept = pl.Series(mask)
        return pl.DataFrame({
            "step": step[mask], "rank": rank[mask], "category": named_as,
            "start_ns": lo[mask], "end_ns": hi[mask], "work": work,
            "collective": collective.filter(kept) if named else None,
            "top_work": names.filter(kept) if work else None,
        }, schema=SEGMENTS_SCHEMA)  # fmt: skip

    comm = kind == _COMM
    matched, crossing, waiting = col["matched"][node], col["crossing"][node], col["waiting"][node]
    arrive = col["arrive"][node]
    parts = [
        frame(e < after_time, _gap_kind(after_launch, e), e, after_time, 0, False),
        frame(kind == _COMPUTE, "compute", s, e, 1, False),
        frame(kind == _MEMORY, "memory", s, e, 1, False),
        frame(comm & matched, "transfer", np.where(crossing | waiting, arrive, s), e, 1, True),
        frame(comm & waiting, "waiting", s, arrive, 0, True),
        frame(comm & ~matched, "unmatched", s, e, 1, True),
        _leads(spans, node, count, col),
    ]
    return pl.concat(parts).filter(pl.col("end_ns") > pl.col("start_ns"))


def _gap_kind(after_launch: np.ndarray, since: np.ndarray) -> np.ndarray:
    """A gap on the path before a piece of work: `host launch` (True) where that work (GPU work)
    was launched after the gap began — the device waited for the host to issue it — else `idle`
    (False)."""
    return (after_launch != NO_LAUNCH) & (after_launch > since)  # type: ignore[no-any-return]


def _gap_names(host_launch: np.ndarray) -> pl.Series:
    """_gap_kind's answers as the categories' names (made by polars: a numpy array of strings
    costs more to hand over than it does to make)."""
    return pl.select(
        pl.when(pl.Series(host_launch)).then(pl.lit("host launch")).otherwise(pl.lit("idle"))
    ).to_series()


def _leads(
    spans: pl.DataFrame, node: np.ndarray, count: np.ndarray, col: dict[str, np.ndarray]
) -> pl.DataFrame:
    """Per step, from its start to where the path's earliest work was entered, on the rank it
    was entered on (the whole step, idle, where the path holds no work)."""
    begins, finish = spans["begin"].to_numpy(), spans["finish"].to_numpy()
    has = count > 0
    earliest = node[(np.cumsum(count) - 1)[has]]
    to = finish.copy()
    to[has] = col["entry_time"][earliest]
    on = spans["first_rank"].to_numpy().astype(np.int32)
    on[has] = col["rank"][col["via"][earliest]]
    host_launch = np.zeros(begins.size, dtype=bool)  # else idle
    host_launch[has] = _gap_kind(col["entry_launch"][earliest], begins[has])
    return pl.DataFrame({
        "step": spans["step"].to_numpy(), "rank": on, "category": _gap_names(host_launch),
        "start_ns": begins, "end_ns": to, "work": 0, "collective": None, "top_work": None,
    }, schema=SEGMENTS_SCHEMA)  # fmt: skip


def _merged(pieces: pl.DataFrame) -> pl.DataFrame:
    """In time order, touching pieces of one rank, category and collective made one, named by
    the work that takes most of its time."""
    # Ordered by numpy and gathered once (a third of what polars' sort of the frame costs).
    pieces = pieces[np.lexsort((pieces["start_ns"].to_numpy(), pieces["step"].to_numpy()))]
    same = (
        (pl.col("step") == pl.col("step").shift())
        & (pl.col("rank") == pl.col("rank").shift())
        & (pl.col("category") == pl.col("category").shift())
        & pl.col("collective").eq_missing(pl.col("collective").shift())
        & (pl.col("start_ns") == pl.col("end_ns").shift())
    )
    # Runs lie side by side once sorted: each run's first piece, its last's end, its work.
    heads = np.flatnonzero(pieces.select(~same.fill_null(False)).to_series().to_numpy())
    if heads.size == 0:
        return pieces.select(list(SEGMENTS_SCHEMA)).cast(SEGMENTS_SCHEMA)  # type: ignore[arg-type]
    lasts = np.append(heads[1:], pieces.height) - 1
    work = np.add.reduceat(pieces["work"].to_numpy(), heads)
    return (
        pieces[heads]
        .with_columns(
            end_ns=pieces["end_ns"].gather(lasts),
            work=pl.Series(work),
            top_work=_top_work(pieces, heads),
        )
        .select(list(SEGMENTS_SCHEMA))
        .cast(SEGMENTS_SCHEMA)  # type: ignore[arg-type]
    )


def _top_work(pieces: pl.DataFrame, heads: np.ndarray) -> pl.Series:
    """Per run of pieces (each starting at a head), the name whose pieces take most of its
    time (the first in name order among equals); null for a run of gaps."""
    run = np.zeros(pieces.height, dtype=np.int64)
    run[heads[1:]] = 1
    named = (
        pieces.select(
            run=pl.Series(np.cumsum(run)),
            name="top_work",
            ns=pl.col("end_ns") - pl.col("start_ns"),
        )
        .drop_nulls("name")
        .group_by("run", "name")
        .agg(pl.col("ns").sum())
        .sort(["run", "ns", "name"], descending=[False, True, False])
        .unique("run", keep="first")
        .select("run", "name")
    )
    runs = pl.DataFrame({"run": np.arange(heads.size, dtype=np.int64)})
    return runs.join(named, on="run", how="left").sort("run")["name"].alias("top_work")
