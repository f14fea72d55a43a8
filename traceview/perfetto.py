"""An annotated timeline of a job in the Chrome trace format, for Perfetto and chrome://tracing:
every rank's compute, communication and memory work on its own lanes (clocks aligned across
ranks), with tracks added per rank that mark the overlap, the exposed communication and the
stretches of the critical path that ran on that rank."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any, BinaryIO

import msgspec
import numpy as np
import polars as pl

from traceview.algebra import apart
from traceview.analysis.spans import overlap_spans
from traceview.compression import gzip_writer
from traceview.documents.lanes import lane_names
from traceview.documents.steps import RankSelection, StepSelection
from traceview.loader import Job

ANNOTATION_TRACKS = ("overlap", "exposed comm")
PATH_TRACK = "critical path"
# Each collective call's arguments on the timeline (null where not known): its own, then what
# `traceview collectives` says of it ("duration": its busbw is a lower bound).
CALL_ARGS = ("step", "collective", "bytes", "module", "bucket", "label", "wait_ns", "transfer_ns",
             "exposed_ns", "busbw_gbps", "bandwidth_on")  # fmt: skip


def event_chunks(
    job: Job, steps: StepSelection | None = None, ranks: RankSelection | None = None
) -> Iterator[tuple[int, bytes]]:
    """The timeline's events as JSON, a rank's kind of event at a time: (how many, the events
    joined by ",\n"). Every interval, overlap span and collective call is written from
    its columns; only the lane names one by one. `steps`, `ranks`: only the work of these
    profiler steps (the step each interval is in), of these ranks."""
    offsets: dict[int | None, float] = (
        {a.rank: a.offset_ns for a in job.cross_rank.ranks} if job.cross_rank else {}
    )
    ranks_read = [
        (r, r.intervals if steps is None else r.intervals.filter(steps.expr("step")))
        for r in job.ranks
        if r.intervals is not None and (ranks is None or r.rank in ranks)
    ]
    ranks_read = [(r, iv) for r, iv in ranks_read if iv is not None and iv.height]
    if not ranks_read:
        return
    start = min(int(iv["ts_ns"].min()) - offsets.get(r.rank, 0) for r, iv in ranks_read)  # type: ignore[arg-type]
    path = _path_spans(job)
    if steps is not None and path.height:
        path = path.filter(steps.expr("step"))
    if path.height:  # a CPU step's path begins with its span, which may begin before any work
        start = min(start, int(path["ts_ns"].min()))  # type: ignore[arg-type]
    labels = _call_labels(job)
    encode = msgspec.json.Encoder().encode
    for i, (report, intervals) in enumerate(ranks_read):
        pid = report.rank if report.rank is not None else 100_000 + i
        shift = round(start + offsets.get(report.rank, 0))  # whole ns: times print exactly
        title = f"rank {report.rank}" if report.rank is not None else report.trace.name
        work = intervals.filter(pl.col("kind") != "other")
        lanes = sorted(work["lane"].unique().to_list())
        on_path = path.filter(pl.col("rank") == report.rank) if report.rank is not None else None
        named = [*ANNOTATION_TRACKS, *([PATH_TRACK] if path.height else []), *lanes]
        meta = [_meta(pid, 0, "process_name", "name", title),
                _meta(pid, 0, "process_sort_index", "sort_index", pid)]  # fmt: skip
        lane_said = lane_names(work, report.backend)  # as the dashboard names its lanes
        for tid, lane in enumerate(named, start=1):
            meta += [_meta(pid, tid, "thread_name", "name", lane_said.get(lane, lane)),
                     _meta(pid, tid, "thread_sort_index", "sort_index", tid)]  # fmt: skip
        yield len(meta), b",\n".join(map(encode, meta))
        tracks = pl.concat(
            pl.DataFrame({"ts_ns": spans.starts, "end_ns": spans.ends}).with_columns(
                cat=pl.lit("traceview"), name=pl.lit(track), tid=pl.lit(tid, pl.Int64)
            )
            for tid, (track, spans) in enumerate(
                zip(ANNOTATION_TRACKS, overlap_spans(work), strict=True), start=1
            )
        )
        yield from _spans(tracks, pid, shift, args=None)
        if on_path is not None and on_path.height:
            # The path is on the aligned clock: from the timeline's start, as every lane is.
            marks = on_path.with_columns(tid=pl.lit(named.index(PATH_TRACK) + 1, pl.Int64))
            yield from _spans(marks, pid, round(start), args=pl.struct("step", "ms_by_category"))
        lane_tid = {lane: tid for tid, lane in enumerate(named, start=1)}
        comm = pl.col("kind") == "comm"
        spans = work.filter(~comm).select(
            "ts_ns",
            "end_ns",
            cat="kind",
            name=pl.col("name").fill_null("None"),
            tid=pl.col("lane").replace_strict(lane_tid, return_dtype=pl.Int64),
            step="step",
        )
        yield from _spans(spans, pid, shift, args=pl.struct("step"))
        calls = work.filter(comm).select(
            "ts_ns", "end_ns", "step", "collective", "bytes", "module",
            cat=pl.lit("comm"),
            name=pl.col("name").fill_null("None"),
            tid=pl.col("lane").replace_strict(lane_tid, return_dtype=pl.Int64),
        )  # fmt: skip
        said = labels.get(report.rank) if report.rank is not None else None
        if calls.height and said is not None:
            calls = _labelled(calls, said, lane_tid)
        missing = [c for c in CALL_ARGS if c not in calls.columns]
        calls = calls.with_columns(pl.lit(None).alias(c) for c in missing)
        yield from _spans(calls, pid, shift, args=pl.struct(*CALL_ARGS))


def _meta(pid: int, tid: int, name: str, key: str, value: object) -> dict[str, Any]:
    return {"ph": "M", "name": name, "pid": pid, "tid": tid, "args": {key: value}}


# Rows written at a time: a GB trace's millions of calls are written a few MB of JSON at a time
# (each row's text is about 100-300 bytes). A text that size is made where the last one was
# freed; one of tens of MB is given fresh pages each time (the C allocator maps blocks over
# 32 MB anew), whose faults cost a many-tiny-steps export a fifth of its CPU
# (benchmarks/bench_outputs.py).
ROWS_AT_A_TIME = 1 << 14
# Rows made into columns at a time: the columns of a block of 256 Ki rows are a few tens of MB.
BLOCK_ROWS = 1 << 18


def _json_rows(frame: pl.DataFrame) -> bytes:
    """The frame's rows as JSON objects joined by ",\n" (polars' NDJSON writer: no string
    holds a raw newline, JSON escapes it, so the lines' ends are where the separators go)."""
    lines = io.BytesIO()
    frame.write_ndjson(lines)
    return lines.getvalue()[:-1].replace(b"\n", b",\n")


def _spans(
    frame: pl.DataFrame, pid: int, shift: int, args: pl.Expr | None
) -> Iterator[tuple[int, bytes]]:
    """Complete events ("X") from a frame of ts_ns, end_ns, cat, name, tid (and the columns
    `args` is made of), in µs from `shift`, ROWS_AT_A_TIME at a time, joined by ",\n"."""
    for block in frame.iter_slices(BLOCK_ROWS):  # the events' columns a block at a time
        events = block.select(
            ph=pl.lit("X"),
            cat="cat",
            name="name",
            pid=pl.lit(pid, pl.Int64),
            tid="tid",
            # µs to the ns: no binary noise such as 1522.8890000000001 in the file
            ts=((pl.col("ts_ns") - shift) / 1000).round(3),
            dur=((pl.col("end_ns") - pl.col("ts_ns")) / 1000).round(3),
            **({} if args is None else {"args": args}),
        )
        for rows in events.iter_slices(ROWS_AT_A_TIME):
            yield rows.height, _json_rows(rows)


def _path_spans(job: Job) -> pl.DataFrame:
    """The critical path as its legs: each stretch of a step's path on one rank (ts_ns, end_ns
    on the aligned clock, rank, cat, name, and in its arguments the step and its time per
    category); empty where the job has none. A leg, not every piece of work: the lanes below
    hold the work, and a trace of millions of kernels stays a trace of millions."""
    segments = job.critical_path().segments
    if segments.height == 0:
        return pl.DataFrame(schema={"ts_ns": pl.Int64, "end_ns": pl.Int64, "rank": pl.Int32})
    new_leg = (pl.col("rank") != pl.col("rank").shift()) | (
        pl.col("step") != pl.col("step").shift()
    )
    legs = segments.with_columns(leg=new_leg.fill_null(True).cum_sum())
    parts = (
        legs.group_by("leg", "category")
        .agg(ms=(pl.col("end_ns") - pl.col("start_ns")).sum() / 1e6)
        .sort("leg", "ms", descending=[False, True])
        .with_columns(ms=pl.concat_str(pl.col("category"), pl.col("ms").round(3), separator=" "))
        .group_by("leg", maintain_order=True)
        .agg(top=pl.col("category").first(), ms="ms")
        # Each leg's texts gathered, then joined: a string join inside the group costs ten times
        # as much (206,000 legs: 0.2 s).
        .with_columns(pl.col("ms").list.join(", "))
    )
    return (
        legs.group_by("leg", maintain_order=True)
        .agg(pl.col("rank", "step").first(), ts_ns=pl.col("start_ns").min(),
             end_ns=pl.col("end_ns").max())
        .join(parts, on="leg")
        .select("ts_ns", "end_ns", "rank", "step", ms_by_category="ms",
                name=pl.format("path: {}", "top"), cat=pl.lit(PATH_TRACK))
    )  # fmt: skip


def _call_labels(job: Job) -> dict[int, pl.DataFrame]:
    """By rank, per call (lane, ts_ns: where it began): what `traceview collectives` says of it
    that the timeline does not already hold."""
    wanted = [c for c in CALL_ARGS if c not in ("step", "collective", "bytes", "module")]
    labels = job.calls.select("rank", "lane", *wanted, ts_ns="start_ns")
    by_rank = labels.partition_by("rank", as_dict=True, include_key=False)
    return {rank: frame for (rank,), frame in by_rank.items() if rank is not None}  # type: ignore[misc]


def _labelled(calls: pl.DataFrame, labels: pl.DataFrame, lane_tid: dict[str, int]) -> pl.DataFrame:
    """One rank's `calls` (on their track, `tid`) with their `labels` (by lane and start; the
    first where two share both), matched on track and start as one integer: each track's times
    moved into a stretch of its own (algebra.apart). A join, or a unique, on one integer key
    costs a tenth to a twentieth of one on a string and an integer. Where the labels are the
    calls' own, row for row (as `traceview collectives` makes them from the same intervals), and
    no two calls share a track and start, each call's label is its own row's: no join at all."""
    labels = labels.with_columns(
        tid=pl.col("lane").replace_strict(lane_tid, default=None, return_dtype=pl.Int64)
    ).drop_nulls(["tid", "ts_ns"])
    tracks = [(f["tid"].to_numpy(), f["ts_ns"].to_numpy()) for f in (calls, labels)]
    shift = apart(len(lane_tid) + 1, *((tid, ts, ts) for tid, ts in tracks))
    keys = [pl.Series("key", ts + shift[tid]) for tid, ts in tracks]
    said = labels.drop("lane", "tid", "ts_ns")
    if _row_for_row(*keys):
        return calls.hstack(said)
    return _joined_on(calls.with_columns(keys[0]), said.with_columns(keys[1]))


def _row_for_row(calls: pl.Series, labels: pl.Series) -> bool:
    """The calls' keys are the labels', in the same order, and no two the same."""
    return (
        calls.len() == labels.len()
        and np.array_equal(calls.to_numpy(), labels.to_numpy())
        and labels.n_unique() == labels.len()
    )


def _joined_on(calls: pl.DataFrame, said: pl.DataFrame) -> pl.DataFrame:
    """`calls` with the first of `said` of the same "key" (null where none), in their order."""
    said = said.unique("key", keep="first")
    return calls.join(said, on="key", how="left", maintain_order="left").drop("key")


def write_annotated(
    job: Job,
    sink: BinaryIO,
    compress: bool,
    steps: StepSelection | None = None,
    ranks: RankSelection | None = None,
) -> int:
    """Write the timeline to `sink` (gzip if `compress`), of these steps and ranks only where
    they are given; returns the number of events."""
    encode = msgspec.json.Encoder().encode
    count = 0
    with gzip_writer(sink) if compress else nullcontext(sink) as out:
        out.write(b'{"displayTimeUnit": "ms", "traceEvents": [\n')
        for events, chunk in event_chunks(job, steps, ranks):
            if count:
                out.write(b",\n")
            out.write(chunk)
            count += events
        cross = job.cross_rank
        meta = {
            "source": job.name,
            "clock": f"aligned on rank {cross.reference_rank}"
            if cross is not None and cross.aligned
            else "as recorded",
        }
        if cross is not None and not cross.aligned:
            meta["not_aligned"] = cross.reason or ""
        found = job.critical_path()
        if found.reason:
            meta["critical_path"] = found.reason
        if steps is not None:
            meta["steps"] = str(steps)
        if ranks is not None:
            meta["ranks"] = str(ranks)
        out.write(b'\n], "traceview": ' + encode(meta) + b"}\n")
    return count
