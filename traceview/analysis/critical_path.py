"""The critical path across ranks: per step, the chain of work that set the step's end, walked
back from the last rank to finish. A matched collective ends only after its last rank arrives,
so at a collective the path moves to that rank and goes on with its work before it. The step's
time (on the aligned clocks, from the first rank's start to the last rank's end) is attributed
to (rank, category); the parts sum to it. Definitions: docs/metrics.md "Critical path"."""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from typing import TYPE_CHECKING, Literal

import msgspec
import polars as pl

from traceview.analysis.path_walk import KINDS, SEGMENTS_SCHEMA, walk
from traceview.plain import counted

Category = Literal[
    "compute", "memory", "transfer", "waiting", "unmatched", "host launch", "idle"
]  # fmt: skip


if TYPE_CHECKING:
    from traceview.analysis.job import JobReport

# Ranks whose intervals are read at once: a job of many ranks is never held whole.
READ_AT_ONCE = 8


STEPS_SCHEMA = {"step": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64, "crossings": pl.Int64}


class CriticalPath(msgspec.Struct, frozen=True, kw_only=True):
    """Per step its window on the aligned clock (`steps`: step, start_ns — the first rank's
    start —, end_ns — the last rank's end —, crossings: times the path moved to another rank)
    and the path's `segments` (step, rank, category, start_ns, end_ns, work, collective), in
    time order: a step's segments tile its window. None where `reason` says why not."""

    steps: pl.DataFrame = msgspec.field(default_factory=lambda: pl.DataFrame(schema=STEPS_SCHEMA))
    segments: pl.DataFrame = msgspec.field(
        default_factory=lambda: pl.DataFrame(schema=SEGMENTS_SCHEMA)
    )
    reason: str | None = None  # why there is none; or which steps were left out, and why
    left_out: int = 0  # steps not on every rank, or cut short

    @property
    def total_ns(self) -> int:
        """Every step's time, summed: what the whole attribution sums to."""
        return int((self.steps["end_ns"] - self.steps["start_ns"]).sum())

    def attribution(self, step: int | None = None) -> dict[tuple[int, Category], int]:
        """(rank, category) -> ns on the path, of one step or of all: they sum to the step
        time (of all steps)."""
        segments = self.segments if step is None else self.segments.filter(pl.col("step") == step)
        totals = segments.group_by("rank", "category").agg(
            ns=(pl.col("end_ns") - pl.col("start_ns")).sum()
        )
        return {(r, c): ns for r, c, ns in totals.sort("ns", descending=True).iter_rows()}


def none_because(reason: str) -> CriticalPath:
    return CriticalPath(reason=reason)


def job_critical_path(
    job: JobReport,
    read: Callable[[Sequence[int]], pl.DataFrame],
    steps: Container[int] | None = None,
) -> CriticalPath:
    """The job's critical path over its steps (those in `steps`, where given); `read` gives
    the intervals of the ranks at some positions of `job.ranks` (loader Job.intervals_of)."""
    positions = [i for i, r in enumerate(job.ranks) if r.rank is not None]
    if not positions:
        return none_because("no trace says which rank it is")
    cross = job.cross_rank
    offsets: dict[int, float]
    if len(positions) == 1:
        offsets = {r.rank: 0.0 for r in (job.ranks[positions[0]],) if r.rank is not None}
    elif cross is None or not cross.aligned:
        why = cross.reason if cross is not None else "no collective call to match"
        return none_because(f"the ranks are not aligned, so no path can cross them: {why}")
    else:
        offsets = {a.rank: a.offset_ns for a in cross.ranks}
    rows = [
        (r.rank, s.step, s.breakdown.start_ns, s.breakdown.end_ns, s.partial)
        for r in (job.ranks[i] for i in positions)
        for s in r.steps
        if steps is None or s.step in steps
    ]
    windows = pl.DataFrame(
        rows,
        schema={"rank": pl.Int32, "step": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64,
                "partial": pl.Boolean},
        orient="row",
    )  # fmt: skip
    wanted = windows["step"].unique().to_list()
    # "host launch" is a device waiting for its host to issue work: a CPU-only rank has no
    # device, and its collectives' issue times (the call on the training thread) say no such
    # thing — a gap before them is idle.
    on_device = [r.rank for r in (job.ranks[i] for i in positions) if r.mode == "gpu"]
    launched = pl.when(pl.col("rank").is_in(on_device)).then(pl.col("launch_ns"))
    work = pl.concat(
        read(positions[i : i + READ_AT_ONCE])
        .filter(pl.col("kind").is_in(KINDS) & pl.col("step").is_in(wanted))
        .select(
            "rank",
            "step",
            "lane",
            "kind",
            "ts_ns",
            "end_ns",
            launched.alias("launch_ns"),
            "collective",
            "name",
            host=~pl.col("rank").is_in(on_device),
        )
        for i in range(0, len(positions), READ_AT_ONCE)
    )
    calls = cross.calls if cross is not None and cross.aligned and len(positions) > 1 else None
    return critical_paths(work, calls, windows, offsets)


def critical_paths(
    work: pl.DataFrame,
    calls: pl.DataFrame | None,
    windows: pl.DataFrame,
    offsets: dict[int, float],
) -> CriticalPath:
    """work: every rank's compute, comm and memory intervals (rank, step, lane, kind, ts_ns,
    end_ns, launch_ns, collective, name, host: a CPU-only rank's); calls: the matched calls
    (rank, lane, start_ns, match, last_rank: an aligned job's cross_rank.CrossRank.calls; None
    for one rank, whose collectives are then `unmatched`); windows: each rank's steps (rank,
    step, start_ns, end_ns, partial). All on each rank's own clock; `offsets` align them."""
    ranks = sorted(offsets)
    off = pl.DataFrame(
        {"rank": ranks, "shift": [round(offsets[r]) for r in ranks]},
        schema={"rank": pl.Int32, "shift": pl.Int64},
    )
    table = windows.filter(pl.col("rank").is_in(ranks))
    whole = table.group_by("step").agg(
        ranks=pl.col("rank").n_unique(), partial=pl.col("partial").any()
    )
    kept = whole.filter((pl.col("ranks") == len(ranks)) & ~pl.col("partial"))["step"].to_list()
    left_out = whole.height - len(kept)
    if not kept:
        return none_because(
            "no step is on every rank, whole" if whole.height else "the traces have no steps"
        )
    aligned = table.filter(pl.col("step").is_in(kept)).join(off, on="rank")
    aligned = aligned.with_columns(
        start_ns=pl.col("start_ns") - pl.col("shift"), end_ns=pl.col("end_ns") - pl.col("shift")
    )
    rows = _with_matches(work.filter(pl.col("step").is_in(kept)), calls, off)
    segments, steps = walk(rows, aligned.select("rank", "step", "start_ns", "end_ns"))
    reason = None
    if left_out:
        reason = (
            f"{counted(left_out, 'step')} left out: not on every rank, or cut short by the "
            "trace's end"
        )
    return CriticalPath(steps=steps, segments=segments, reason=reason, left_out=left_out)


def _with_matches(
    work: pl.DataFrame, calls: pl.DataFrame | None, off: pl.DataFrame
) -> pl.DataFrame:
    """The work on the aligned clock, each matched call with its match, the match's last
    arrival and the rank that arrived last (as `ranks` says: cross_rank.py)."""
    if calls is None:
        calls = pl.DataFrame(
            schema={"rank": pl.Int32, "lane": pl.String, "last_rank": pl.Int32,
                    "start_ns": pl.Int64, "match": pl.Int64}
        )  # fmt: skip
    matched = calls.select(
        "rank", "lane", ts_ns="start_ns", match=pl.col("match").cast(pl.Int64),
        last_rank=pl.col("last_rank").cast(pl.Int32),
    ).unique(["rank", "lane", "ts_ns"], keep="first")  # fmt: skip
    last = (
        matched.join(off, on="rank")
        .group_by("match")
        .agg(
            arrive=(pl.col("ts_ns") - pl.col("shift")).max(), last_rank=pl.col("last_rank").first()
        )
    )
    return (
        work.join(matched.drop("last_rank"), on=["rank", "lane", "ts_ns"], how="left")
        .join(last, on="match", how="left")
        .join(off, on="rank")
        .select(
            "rank", "step", "lane", "collective", "match", "arrive", "last_rank", "name", "host",
            kind=pl.col("kind").cast(pl.String),
            start=pl.col("ts_ns") - pl.col("shift"),
            end=pl.col("end_ns") - pl.col("shift"),
            launch=pl.col("launch_ns") - pl.col("shift"),
        )
    )  # fmt: skip
