"""An annotated timeline of a job in the Chrome trace format, for Perfetto and chrome://tracing:
every rank's compute, communication and memory work on its own lanes (clocks aligned across
ranks), with tracks added per rank that mark the overlap and the exposed communication."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any, BinaryIO

import msgspec
import polars as pl

from traceview.analysis.spans import overlap_spans
from traceview.loader import Job

ANNOTATION_TRACKS = ("overlap", "exposed comm")


def _us(ns: int) -> float:
    return round(ns / 1000, 3)


def annotated_events(job: Job) -> Iterator[dict[str, Any]]:
    offsets: dict[int | None, float] = (
        {a.rank: a.offset_ns for a in job.cross_rank.ranks} if job.cross_rank else {}
    )
    ranks = [(r, r.intervals) for r in job.ranks if r.intervals is not None and r.intervals.height]
    if not ranks:
        return
    start = min(int(iv["ts_ns"].min()) - offsets.get(r.rank, 0) for r, iv in ranks)  # type: ignore[arg-type]
    labels = _call_labels(job)
    for i, (report, intervals) in enumerate(ranks):
        pid = report.rank if report.rank is not None else 100_000 + i
        shift = start + offsets.get(report.rank, 0)
        title = f"rank {report.rank}" if report.rank is not None else report.trace.name
        yield {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": title}}
        yield {
            "ph": "M",
            "name": "process_sort_index",
            "pid": pid,
            "tid": 0,
            "args": {"sort_index": pid},
        }
        work = intervals.filter(pl.col("kind") != "other")
        lanes = sorted(work["lane"].unique().to_list())
        for tid, lane in enumerate([*ANNOTATION_TRACKS, *lanes], start=1):
            yield {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": lane}}
            yield {
                "ph": "M",
                "name": "thread_sort_index",
                "pid": pid,
                "tid": tid,
                "args": {"sort_index": tid},
            }
        for tid, spans in enumerate(overlap_spans(work), start=1):
            for s, e in zip(spans.starts.tolist(), spans.ends.tolist(), strict=True):
                yield {
                    "ph": "X",
                    "cat": "traceview",
                    "name": ANNOTATION_TRACKS[tid - 1],
                    "pid": pid,
                    "tid": tid,
                    "ts": _us(s - shift),
                    "dur": _us(e - s),
                }
        lane_tid = {lane: tid for tid, lane in enumerate(lanes, start=len(ANNOTATION_TRACKS) + 1)}
        for row in work.iter_rows(named=True):
            args: dict[str, Any] = {"step": row["step"]}
            if row["kind"] == "comm":
                args.update(
                    {k: row[k] for k in ("collective", "bytes", "module") if row[k] is not None}
                )
                args.update(labels.get((report.rank, row["ts_ns"]), {}))
            yield {
                "ph": "X",
                "cat": row["kind"],
                "name": str(row["name"]),
                "pid": pid,
                "tid": lane_tid[row["lane"]],
                "ts": _us(row["ts_ns"] - shift),
                "dur": _us(row["end_ns"] - row["ts_ns"]),
                "args": args,
            }


def _call_labels(job: Job) -> dict[tuple[int | None, int], dict[str, Any]]:
    """(rank, start) -> what `traceview collectives` says of that call."""
    calls = job.calls
    if calls.height == 0:
        return {}
    wanted = ["bucket", "label", "wait_ns", "transfer_ns", "exposed_ns", "busbw_gbps"]
    wanted.append("bandwidth_on")  # "duration": busbw is a lower bound
    return {
        (row["rank"], row["start_ns"]): {k: row[k] for k in wanted if row[k] is not None}
        for row in calls.select("rank", "start_ns", *wanted).iter_rows(named=True)
    }


def write_annotated(job: Job, sink: BinaryIO, compress: bool) -> int:
    """Write the timeline to `sink` (gzip if `compress`); returns the number of events."""
    encode = msgspec.json.Encoder().encode
    count = 0
    with gzip.GzipFile(fileobj=sink, mode="wb") if compress else nullcontext(sink) as out:
        out.write(b'{"displayTimeUnit": "ms", "traceEvents": [\n')
        for event in annotated_events(job):
            out.write((b",\n" if count else b"") + encode(event))
            count += 1
        cross = job.cross_rank
        meta = {
            "source": job.name,
            "clock": f"aligned on rank {cross.reference_rank}"
            if cross is not None and cross.aligned
            else "as recorded",
        }
        if cross is not None and not cross.aligned:
            meta["not_aligned"] = cross.reason or ""
        out.write(b'\n], "traceview": ' + encode(meta) + b"}\n")
    return count
