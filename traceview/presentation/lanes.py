"""One step's timeline as the dashboard and the report draw it: each rank's lanes named by what
they do (the training thread, a Gloo worker, `stream 7 (NCCL)`), its collectives split into
waiting for the last rank and transfer where ranks are aligned, the overlap and exposed tracks,
and work closer than one pixel drawn as one bar."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from traceview import Job, overlap_spans
from traceview.documents import StepSelection, build
from traceview.documents.lanes import lane_names
from traceview.presentation.frames import rank_words

OVERLAP, EXPOSED, COLLECTIVES = "overlap", "exposed comm", "collectives"
WAITING, TRANSFER, COLLECTIVE = "waiting for peers", "transfer", "collective"

TIMELINE_SCHEMA = {
    "rank": pl.Int64,
    "row": pl.String,  # "rank 0 · training thread": the chart's lane label
    "lane": pl.String,  # as the trace says it: "thread 29060", "stream 7"
    "kind": pl.String,
    "name": pl.String,
    "start_ms": pl.Float64,
    "end_ms": pl.Float64,
}


def timeline_frame(
    job: Job, step: int, width_px: int = 1200, ranks: Sequence[int] | None = None
) -> tuple[pl.DataFrame, bool]:
    """rank, row, lane, kind, name, start_ms, end_ms of one step (ms from the step's earliest
    start): per rank its overlap and exposed tracks, its collectives (waiting | transfer where
    ranks are aligned, else collective) and its lanes. Work of one lane and kind closer than one
    pixel of `width_px` across the step is one bar, its name saying how many it joins (True is
    returned when any was joined). `ranks`: the positions (in `job.ranks`) of the ranks drawn,
    only whose intervals are read; all by default."""
    parts = []
    # The job's intervals, read from its traces (or store) when first asked for.
    intervals = job.intervals if ranks is None else job.intervals_of(ranks)
    chosen = intervals.filter((pl.col("step") == step) & (pl.col("kind") != "other"))
    backend = {r.rank: r.backend for r in job.ranks}
    shown = set(chosen["rank"].unique().to_list())
    for (rank,), iv in chosen.partition_by("rank", as_dict=True, maintain_order=True).items():
        names = lane_names(iv, backend.get(rank))
        for lane, spans in zip((OVERLAP, EXPOSED), overlap_spans(iv), strict=True):
            parts.append(_rows(rank, lane, [lane] * len(spans), lane, spans.starts, spans.ends))
        parts.append(
            iv.select(
                pl.lit(rank, pl.Int64).alias("rank"),
                pl.col("lane").replace_strict(names).alias("label"),
                "lane",
                pl.col("kind").cast(pl.String),
                pl.col("name").cast(pl.String),
                "ts_ns",
                "end_ns",
            )
        )
    parts += [p for p in _collective_rows(job, step) if p["rank"][0] in shown]
    if not parts:
        return pl.DataFrame(schema=TIMELINE_SCHEMA), False
    frame = pl.concat(parts, how="vertical_relaxed")
    origin = int(frame["ts_ns"].min())  # type: ignore[arg-type]
    window = int(frame["end_ns"].max()) - origin  # type: ignore[arg-type]
    frame, joined = _join_within(frame, window // max(1, width_px))
    frame = frame.with_columns(
        row=pl.format("{} · {}", rank_words(), pl.col("label")),
        start_ms=(pl.col("ts_ns") - origin) / 1e6,
        end_ms=(pl.col("end_ns") - origin) / 1e6,
    )
    return frame.select(list(TIMELINE_SCHEMA)).cast(TIMELINE_SCHEMA), joined  # type: ignore[arg-type]


def row_order(frame: pl.DataFrame) -> list[str]:
    """The lane labels top to bottom: by rank, then overlap, exposed, collectives, the training
    thread, workers and other threads, then the streams."""
    tracks = {OVERLAP: 0, EXPOSED: 1, COLLECTIVES: 2, "training thread": 3}
    rows = frame.select("rank", "row", "lane").unique()
    key = rows.with_columns(
        unknown=pl.col("rank").is_null(),
        track=pl.col("row").str.split(" · ").list.last().replace_strict(tracks, default=4),
        stream=pl.col("lane").str.starts_with("stream "),
        number=pl.col("lane").str.extract(r"(\d+)$").cast(pl.Int64, strict=False),
    ).sort("unknown", "rank", "track", "stream", "number", "row")
    return key["row"].to_list()


def _rows(
    rank: int | None,
    label: str,
    kinds: Sequence[str],
    name: str,
    starts: Sequence[int] | np.ndarray,
    ends: Sequence[int] | np.ndarray,
) -> pl.DataFrame:
    """Bars on a track of the chart's own (the lane is the track's name)."""
    n = len(kinds)
    return pl.DataFrame(
        {
            "rank": pl.Series([rank] * n, dtype=pl.Int64),
            "label": [label] * n,
            "lane": [label] * n,
            "kind": list(kinds),
            "name": [name] * n,
            "ts_ns": pl.Series(starts, dtype=pl.Int64),
            "end_ns": pl.Series(ends, dtype=pl.Int64),
        }
    )


def _collective_rows(job: Job, step: int) -> list[pl.DataFrame]:
    """Each collective call of the step on its rank's collectives track: the time it waited for
    the last rank to arrive, then its transfer, where the job's ranks are aligned; else whole."""
    calls = build.job_calls(job, StepSelection(((step, step),))).calls
    out = []
    for c in calls:
        if c.start_us is None or c.end_us is None:
            continue
        start, end = round(c.start_us * 1e3), round(c.end_us * 1e3)
        what = " ".join(filter(None, [c.collective, c.label]))
        if c.wait_us is None or c.transfer_us is None:
            pieces = [(start, end, COLLECTIVE)]
        else:
            arrived = min(end, start + round(c.wait_us * 1e3))
            pieces = [(start, arrived, WAITING), (arrived, end, TRANSFER)]
        kept = [(s, e, k) for s, e, k in pieces if e > s]
        if kept:
            s, e, k = zip(*kept, strict=True)
            out.append(_rows(c.rank, COLLECTIVES, k, what or COLLECTIVE, s, e))
    return out


def _join_within(frame: pl.DataFrame, gap_ns: int) -> tuple[pl.DataFrame, bool]:
    """Bars of one rank, lane and kind whose gap is under `gap_ns` joined into one, its name
    saying how many it holds: what a chart that wide can show, sent and nothing more."""
    keys = ["rank", "label", "lane", "kind"]
    ordered = frame.sort([*keys, "ts_ns"], nulls_last=True)
    reach = pl.col("end_ns").cum_max().shift(1).over(keys)
    ordered = ordered.with_columns(
        piece=(reach.is_null() | (pl.col("ts_ns") > reach + gap_ns)).cum_sum().over(keys)
    )
    joined = ordered.group_by([*keys, "piece"], maintain_order=True).agg(
        pl.col("ts_ns").min(),
        pl.col("end_ns").max(),
        pl.col("name").first(),
        held=pl.len(),
    )
    many = pl.col("held") > 1
    named = pl.when(many).then(pl.format("{} and {} more", "name", pl.col("held") - 1))
    held = int(joined["held"].max() or 0) if joined.height else 0  # type: ignore[arg-type]
    return joined.with_columns(name=named.otherwise("name")), held > 1
