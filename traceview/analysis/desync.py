"""Desync and hang signs from a job's traces (docs/metrics.md "Desync"). Per process group:

- where every call records its sequence number (`Seq`), the ranks' calls are lined up by it: a
  rank with no call at a number the others have, within the numbers its own calls span
  (`missing`); calls at one number that differ in type or size (`mismatch`); a rank whose last
  call comes before the others' last (`stops early`, where a hang would sit);
- where the group is named but records no numbers, by what each rank ran in each step: a rank
  that ran fewer (or more) calls of a type and size in a step than the others agree on; their
  order is not compared (Gloo's worker threads start queued calls in either order);
- where the trace names no group and records no numbers but the calls are device kernels
  (NCCL, RCCL), by their order on each stream: a stream runs its kernels in the order they were
  issued, and each group's collectives go to a stream of their own (a runtime's records of its
  collectives, XPU's oneCCL, lie on the host thread that made the calls, in the order it made
  them: that thread is their stream here), so each rank's streams,
  matched across ranks by the order of their first call, are lined up call by call against the
  order most ranks ran: a call a rank lacks (`missing`), one it ran in another order or that
  the others lack (`mismatch`);
- where the trace names no group, records no numbers and runs its calls on CPU threads (Gloo),
  nothing: calls of different groups cannot be told apart (`unjudged` says so).

Point-to-point calls are left out: they need not run on every rank."""

from __future__ import annotations

import difflib
from typing import Literal

import msgspec
import polars as pl

from traceview.analysis.matching import POINT_TO_POINT, UNEVEN
from traceview.plain import UNKNOWN, counted, noun
from traceview.tables import RECORDS_LANE, device_lane

UNNAMED = "default"  # the group of calls whose trace names none

Kind = Literal["missing", "mismatch", "stops early"]
_WAYS = ("sequence numbers", "steps", "order on each stream")  # how calls were lined up


class DesyncSign(msgspec.Struct, frozen=True, kw_only=True):
    kind: Kind
    pg: str  # the process group
    rank: int  # the rank that differs from the others
    others: tuple[int, ...]  # the ranks that ran the call this rank lacks or differs from
    seq: int | None  # the call's sequence number, where recorded
    collective: str | None  # the others' call
    bytes: int | None
    step: int | None  # the others' step
    others_dur_ns: int | None  # how long the others spent in it (median): how long they waited
    said: str  # the sign in one sentence, as every output gives it
    # stops early: whether this rank's trace goes on past the start of the others' next call
    # (still running, no longer joining: a hang sign); None where the clocks are not known
    trace_goes_on: bool | None = None

    @property
    def hang_or_desync(self) -> bool:
        """A sign the traces cannot explain by a profiling window that ended early."""
        return self.kind != "stops early" or self.trace_goes_on is True


class Desync(msgspec.Struct, frozen=True, kw_only=True):
    groups: int  # process groups checked
    calls: int  # their collective calls
    keyed_by: str  # "sequence numbers", "steps", "sequence numbers and steps", or "-"
    signs: tuple[DesyncSign, ...]
    unjudged: tuple[str, ...] = ()  # groups not checked, and why


def desync(
    calls: pl.DataFrame,
    steps: dict[int, set[int]],
    trace_ends: dict[int, int],
    offsets: dict[int, float] | None,
) -> Desync | None:
    """calls: every rank's collective calls (rank, pg, seq, collective, bytes, step, start_ns,
    dur_ns); steps: the profiler steps each rank's trace holds whole; trace_ends: each rank's
    last work's end on its own clock; offsets: each rank's clock offset where the clocks are
    aligned ({} where they are one), else None. None below two ranks."""
    calls = calls.filter(
        pl.col("rank").is_not_null() & ~pl.col("collective").fill_null("").is_in(POINT_TO_POINT)
    ).with_columns(
        named=pl.col("pg").is_not_null(),
        pg=pl.col("pg").fill_null(UNNAMED),
        size=pl.when(pl.col("collective").is_in(UNEVEN)).then(None).otherwise(pl.col("bytes")),
    )
    if calls["rank"].n_unique() < 2:
        return None
    signs: list[DesyncSign] = []
    ways: set[str] = set()
    unjudged: list[str] = []
    checked = lined_up = 0
    groups = calls.partition_by("pg", as_dict=True)
    for (pg,), group in sorted(groups.items(), key=lambda kv: str(kv[0][0])):
        if group["rank"].n_unique() < 2:
            continue
        if group["seq"].null_count() == 0:
            ways.add("sequence numbers")
            lined = group.sort("rank", "start_ns")
            signs += _by_sequence(lined, str(pg))
            signs += _stops_early(lined, str(pg), trace_ends, offsets)
        elif group["named"].all():
            ways.add("steps")
            signs += _by_step(group, str(pg), steps)
        elif group.select(device_lane(pl.col("lane").fill_null("")).all()).item():
            found, why = _by_stream_order(group, steps)
            if why is not None:
                unjudged.append(why)
                continue
            ways.add("order on each stream")
            signs += found
        else:
            unjudged.append(
                f"{counted(group.height, 'call')} that {noun(group.height, 'names', 'name')} no "
                f"process group and {noun(group.height, 'records', 'record')} no sequence "
                "numbers: calls of different groups cannot be told apart"
            )
            continue
        checked += 1
        lined_up += group.height
    keyed = " and ".join(w for w in _WAYS if w in ways) or "-"
    return Desync(
        groups=checked, calls=lined_up, keyed_by=keyed, signs=tuple(signs), unjudged=tuple(unjudged)
    )


def _majority(calls: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Per `by`, the most common (collective, size) and the ranks that ran it (ties: the one
    of the lowest rank), with its seq, step, bytes and the median duration."""
    return (
        calls.group_by(*by, "collective", "size")
        .agg(
            n=pl.len(),
            low=pl.col("rank").min(),
            others=pl.col("rank").unique().sort(),
            others_dur_ns=pl.col("dur_ns").median(),
            **{c: pl.col(c).first() for c in ("seq", "step", "bytes") if c not in by},
        )
        .sort([*by, "n", "low"], descending=[False] * len(by) + [True, False])
        .group_by(*by, maintain_order=True)
        .first()
    )


def _by_sequence(lined: pl.DataFrame, pg: str) -> list[DesyncSign]:
    """Within the numbers every rank's calls span: numbers a rank has no call at, and calls
    that differ in type or size from the most common at their number."""
    ranks = pl.DataFrame(
        {"rank": sorted(lined["rank"].unique().to_list())}, schema={"rank": pl.Int32}
    )
    spans = lined.group_by("rank").agg(first=pl.col("seq").min(), last=pl.col("seq").max())
    low, high = spans["first"].max(), spans["last"].min()
    shared = lined.filter(pl.col("seq").is_between(low, high))
    majority = _majority(shared, ["seq"])
    absent = (
        shared.select("seq").unique().join(ranks, how="cross")
        .join(shared.select("seq", "rank"), on=["seq", "rank"], how="anti")
        .with_columns(
            kind=pl.lit("missing"),
            own_coll=pl.lit(None, pl.String),
            own_bytes=pl.lit(None, pl.Int64),
        )
    )  # fmt: skip
    different = (
        shared.join(majority.select("seq", m_coll="collective", m_size="size"), on="seq")
        .filter(
            (pl.col("collective").fill_null("") != pl.col("m_coll").fill_null(""))
            | ~pl.col("size").eq_missing(pl.col("m_size"))
        )
        .select("seq", "rank", kind=pl.lit("mismatch"), own_coll="collective", own_bytes="bytes")
    )
    found = pl.concat([absent.select(different.columns), different])
    found = found.join(majority, on="seq").sort("seq", "rank")
    return [_sign(row, pg, _at_number(row, pg)) for row in found.iter_rows(named=True)]


def _by_step(group: pl.DataFrame, pg: str, steps: dict[int, set[int]]) -> list[DesyncSign]:
    """In each step every rank's trace holds whole: per collective type and size, ranks that
    ran a different number of them than most ranks did."""
    ranks = sorted(group["rank"].unique().to_list())
    shared = set.intersection(*(steps.get(r, set()) for r in ranks))
    in_steps = group.filter(pl.col("step").is_in(sorted(shared)))
    key = ["step", "collective", "size"]
    counts = in_steps.group_by(*key, "rank").agg(
        n=pl.len(), dur=pl.col("dur_ns").median(), bytes=pl.col("bytes").first()
    )
    cells = in_steps.select(key).unique()
    every = (
        cells.join(pl.DataFrame({"rank": ranks}, schema={"rank": pl.Int32}), how="cross")
        .join(counts.select(*key, "rank", "n"), on=[*key, "rank"], how="left", nulls_equal=True)
        .with_columns(pl.col("n").fill_null(0))
    )
    usual = (
        every.group_by(*key, "n")
        .agg(votes=pl.len(), others=pl.col("rank").sort())
        .sort([*key, "votes", "n"], descending=[False, False, False, True, True])
        .group_by(*key, maintain_order=True)
        .first()
        .rename({"n": "usual"})
    )
    # The ranks that ran the usual number joined to the few rows that differ only: a list of
    # every rank on every rank's row is the ranks squared.
    off = (
        every.join(usual.drop("others"), on=key, nulls_equal=True)
        .filter((pl.col("n") != pl.col("usual")) & (pl.col("votes") * 2 > len(ranks)))
        .join(usual.select(*key, "others"), on=key, nulls_equal=True)
    )
    off = off.with_columns(
        kind=pl.when(pl.col("n") < pl.col("usual"))
        .then(pl.lit("missing"))
        .otherwise(pl.lit("mismatch")),
    )
    dur = counts.group_by(key).agg(
        others_dur_ns=pl.col("dur").median(), bytes=pl.col("bytes").first()
    )
    found = off.join(dur, on=key, nulls_equal=True).with_columns(seq=pl.lit(None, pl.Int64))
    return [
        _sign(row, pg, _in_step(row, pg))
        for row in found.sort("step", "collective", "rank").iter_rows(named=True)
    ]


def _call(collective: str | None, nbytes: int | None) -> str:
    return (
        f"{collective or 'unknown'} of {'unknown size' if nbytes is None else f'{nbytes:,} bytes'}"
    )


def _ranks(ranks: list[int] | tuple[int, ...]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))


def _ms(ns: float | None) -> str:
    return UNKNOWN if ns is None else f"{ns / 1e6:,.3f} ms"


def _at_number(row: dict[str, object], pg: str) -> str:
    others = [r for r in row["others"] if r != row["rank"]]  # type: ignore[attr-defined]
    theirs = f"{_call(row['collective'], row['bytes'])} (step {row['step']})"  # type: ignore[arg-type]
    if row["kind"] == "missing":
        return (
            f"rank {row['rank']} has no call at sequence number {row['seq']} of group {pg}, "
            f"where {_ranks(others)} ran {theirs} and spent {_ms(row['others_dur_ns'])} in it"  # type: ignore[arg-type]
        )
    return (
        f"rank {row['rank']} ran {_call(row['own_coll'], row['own_bytes'])} at sequence "  # type: ignore[arg-type]
        f"number {row['seq']} of group {pg}, where {_ranks(others)} ran {theirs}"
    )


def _in_step(row: dict[str, object], pg: str) -> str:
    others = [r for r in row["others"] if r != row["rank"]]  # type: ignore[attr-defined]
    return (
        f"rank {row['rank']} ran {row['n']} × {_call(row['collective'], row['bytes'])} in step "  # type: ignore[arg-type]
        f"{row['step']} of group {pg}, where {_ranks(others)} ran {row['usual']} "
        f"({_ms(row['others_dur_ns'])} each)"  # type: ignore[arg-type]
    )


def _sign(row: dict[str, object], pg: str, said: str) -> DesyncSign:
    return DesyncSign(
        kind=row["kind"],  # type: ignore[arg-type]
        pg=pg,
        rank=row["rank"],  # type: ignore[arg-type]
        others=tuple(r for r in row["others"] if r != row["rank"]),  # type: ignore[attr-defined]
        seq=row["seq"],  # type: ignore[arg-type]
        collective=row["collective"],  # type: ignore[arg-type]
        bytes=row["bytes"],  # type: ignore[arg-type]
        step=row["step"],  # type: ignore[arg-type]
        others_dur_ns=None if row["others_dur_ns"] is None else int(row["others_dur_ns"]),  # type: ignore[call-overload]
        said=said,
    )


def _stops_early(
    lined: pl.DataFrame, pg: str, trace_ends: dict[int, int], offsets: dict[int, float] | None
) -> list[DesyncSign]:
    """Ranks whose last call in the group comes before the other ranks' last."""
    lasts = dict(lined.group_by("rank").agg(pl.col("seq").max()).iter_rows())
    furthest = max(lasts.values())
    out = []
    for rank, last in sorted(lasts.items()):
        if last == furthest:
            continue
        after = lined.filter((pl.col("rank") != rank) & (pl.col("seq") > last))
        nxt = after.filter(pl.col("seq") == after["seq"].min())
        row = nxt.row(0, named=True)
        goes_on = None
        if offsets is not None and rank in trace_ends:
            starts = [
                s - offsets.get(r, 0.0) for r, s in zip(nxt["rank"], nxt["start_ns"], strict=True)
            ]
            goes_on = trace_ends[rank] - offsets.get(rank, 0.0) > min(starts)
        others = tuple(sorted(nxt["rank"].to_list()))
        trace = {
            True: "while its trace goes on: where a hang would sit",
            False: "after its trace ends (its profiler stopped first)",
            None: "the clocks are not aligned: whether its trace goes on is unknown",
        }[goes_on]
        said = (
            f"rank {rank}'s last call in group {pg} is sequence number {last}; "
            f"{_ranks(others)} ran {after['seq'].n_unique()} more, from "
            f"{_call(row['collective'], row['bytes'])} at {row['seq']} (step {row['step']}), "
            f"{trace}"
        )
        out.append(
            DesyncSign(
                kind="stops early",
                pg=pg,
                rank=rank,
                others=others,
                seq=row["seq"],
                collective=row["collective"],
                bytes=row["bytes"],
                step=row["step"],
                others_dur_ns=int(nxt["dur_ns"].median() or 0),  # type: ignore[arg-type]
                said=said,
                trace_goes_on=goes_on,
            )
        )
    return out


# (step, collective, size): what is compared in an order (the step places a call the others
# ran where a rank has none, among calls alike)
Call = tuple[int | None, str | None, int | None]


def _by_stream_order(
    group: pl.DataFrame, steps: dict[int, set[int]]
) -> tuple[list[DesyncSign], str | None]:
    """In the steps every rank's trace holds whole, each rank's calls on each of its streams
    in the order they ran, against the order most ranks ran on the matching stream; or why
    they cannot be lined up."""
    ranks = sorted(group["rank"].unique().to_list())
    shared = set.intersection(*(steps.get(r, set()) for r in ranks))
    in_steps = group.filter(pl.col("step").is_in(sorted(shared))).sort("rank", "start_ns")
    if not in_steps.height:
        return [], "no step every rank's trace holds whole: the calls' orders cannot be compared"
    streams: dict[int, list[pl.DataFrame]] = {}
    for (rank,), calls in in_steps.partition_by("rank", as_dict=True, maintain_order=True).items():
        by_lane = calls.partition_by("lane", maintain_order=True)  # by first call: issue order
        streams[rank] = by_lane
    counts = {len(v) for v in streams.values()}
    if len(counts) > 1:
        return [], (
            f"ranks run their calls on different numbers of streams ({min(counts)} to "
            f"{max(counts)}): the streams cannot be matched across ranks"
        )
    signs: list[DesyncSign] = []
    for k in range(counts.pop()):
        lined = {r: streams[r][k] for r in ranks}
        signs += _against_usual_order(lined, k)
    return signs, None


def _against_usual_order(lined: dict[int, pl.DataFrame], k: int) -> list[DesyncSign]:
    """Each rank's order on its k-th stream against the order most ranks ran (a majority;
    none, no sign: there is no order to hold a rank to)."""
    orders = {
        r: list(zip(c["step"], c["collective"], c["size"], strict=True)) for r, c in lined.items()
    }
    keys = {r: tuple(o) for r, o in orders.items()}
    votes: dict[tuple[Call, ...], list[int]] = {}
    for r, key in keys.items():
        votes.setdefault(key, []).append(r)
    usual, holders = max(votes.items(), key=lambda kv: (len(kv[1]), -min(kv[1])))
    if 2 * len(holders) <= len(lined):
        return []
    first = lined[holders[0]]
    # A runtime's records lie on the host thread that made the calls (tables.py device_lane).
    lane = "thread" if str(first["lane"][0]).startswith(RECORDS_LANE) else "stream"
    others_dur = (
        pl.concat([lined[r].select("dur_ns").with_row_index("at") for r in holders])
        .group_by("at")
        .agg(pl.col("dur_ns").median())
        .sort("at")["dur_ns"]
        .to_list()
    )
    signs = []
    for rank, order in orders.items():
        if keys[rank] == usual:
            continue
        for kind, at, did in _differences(list(usual), order):
            row = first.row(min(at, first.height - 1), named=True)
            signs.append(
                DesyncSign(
                    kind=kind, pg=UNNAMED, rank=rank, others=tuple(holders), seq=None,
                    collective=row["collective"], bytes=row["bytes"], step=row["step"],
                    others_dur_ns=int(others_dur[min(at, len(others_dur) - 1)]),
                    said=f"rank {rank} {did}, where {_ranks(holders)} ran "
                    f"{_call(row['collective'], row['bytes'])} (step {row['step']}, call "
                    f"{at + 1} on their {lane} {k + 1}); lined up by order on the {lane}, which "
                    "runs its calls in the order they were issued",
                )
            )  # fmt: skip
    return signs


def _differences(usual: list[Call], mine: list[Call]) -> list[tuple[Kind, int, str]]:
    """Where `mine` departs from `usual`: (kind, the position in `usual`, what this rank did
    there, in words)."""
    out: list[tuple[Kind, int, str]] = []
    if sorted(usual, key=str) == sorted(mine, key=str):  # the same calls, in another order
        at = 0
        while at < len(usual):
            if usual[at] == mine[at]:
                at += 1
                continue
            end = at + 1
            while end < len(usual) and usual[end] != mine[end]:
                end += 1
            ran = ", then ".join(_call(*c[1:]) for c in mine[at:end])
            out.append(("mismatch", at, f"ran {ran} in another order"))
            at = end
        return out
    matcher = difflib.SequenceMatcher(None, usual, mine, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("delete", "replace"):
            out += [("missing", i, "has no call") for i in range(i1, i2)]
        if tag in ("insert", "replace"):
            at = min(i1, len(usual) - 1)
            out += [
                ("mismatch", at, f"ran {_call(*mine[j][1:])}, which the others did not")
                for j in range(j1, j2)
            ]
    return out
