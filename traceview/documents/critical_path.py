"""`traceview critical-path`'s document, from the jobs loaded (analysis/critical_path.py)."""

from __future__ import annotations

from collections import defaultdict

import polars as pl

from traceview.analysis.critical_path import CriticalPath
from traceview.documents.build import envelope, errors
from traceview.documents.path_structs import (
    CriticalPathDocument,
    JobPath,
    PathPart,
    PathSegment,
    StepPath,
)
from traceview.documents.steps import StepSelection
from traceview.loader import Job, Runs


def parts(attribution: dict, total_ns: int) -> list[PathPart]:
    """Largest first (the attribution's order)."""
    return [
        PathPart(
            rank=rank, category=category, us=ns / 1000, share=ns / total_ns if total_ns else 0.0
        )
        for (rank, category), ns in attribution.items()
    ]


def step_paths(found: CriticalPath) -> list[StepPath]:
    segments: dict[int, list[PathSegment]] = defaultdict(list)
    shares: dict[int, dict] = defaultdict(dict)
    by_part = (
        found.segments.group_by("step", "rank", "category")
        .agg(ns=(pl.col("end_ns") - pl.col("start_ns")).sum())
        .sort(["step", "ns", "rank", "category"], descending=[False, True, False, False])
    )
    for step, rank, category, ns in by_part.iter_rows():
        shares[step][(rank, category)] = ns
    starts = dict(found.steps.select("step", "start_ns").iter_rows())
    for step, rank, category, start, end, work, collective, top in found.segments.iter_rows():
        segments[step].append(
            PathSegment(rank=rank, category=category, at_us=(start - starts[step]) / 1000,
                        us=(end - start) / 1000, work=work, collective=collective,
                        top_work=top)
        )  # fmt: skip
    return [
        StepPath(step=step, start_us=start / 1000, step_us=(end - start) / 1000,
                 crossings=crossings, parts=parts(shares[step], end - start),
                 segments=segments[step])
        for step, start, end, crossings in found.steps.iter_rows()
    ]  # fmt: skip


def caveats(job: Job, found: CriticalPath, ranks: int) -> list[str]:
    out = []
    total = found.total_ns
    by_category: dict[str, int] = defaultdict(int)
    for (_, category), ns in found.attribution().items():
        by_category[category] += ns
    share = {c: 100 * ns / total for c, ns in by_category.items() if total}
    if share.get("unmatched"):
        out.append(
            f"{share['unmatched']:.1f} % of the path is in collective calls not matched across "
            "ranks (a subgroup's, or one some rank lacks): the path cannot follow them to the "
            "rank they waited for, so their time is waiting and transfer together"
        )
    if share.get("waiting"):
        out.append(
            f"{share['waiting']:.1f} % of the path is waiting in calls whose last rank ran them "
            "in another of its steps: that rank's work before them is not this step's to follow"
        )
    world = max((r.world_size or 0 for r in job.ranks), default=0)
    if world > ranks > 1:
        out.append(
            f"the traces hold {ranks} of the job's {world} ranks: the path crosses only those, "
            "and a rank not traced may have set a step's end"
        )
    if any(r.mode == "cpu" for r in job.ranks):
        out.append(
            "CPU traces: the path runs on the host threads, and a gap on it is idle (time in no "
            "op the trace counts as compute: Python, data loading); host launch is GPU-only"
        )
    return out


def job_path(job: Job, steps: StepSelection | None) -> JobPath:
    found = job.critical_path(steps)
    ranks = sum(1 for r in job.ranks if r.rank is not None)
    cross = job.cross_rank
    clock = (
        f"aligned on rank {cross.reference_rank}"
        if cross is not None and cross.aligned
        else "the rank's own"
    )
    return JobPath(
        job=job.name,
        ranks=ranks,
        clock=clock,
        found=found.steps.height > 0,
        reason=found.reason,
        steps_left_out=found.left_out,
        totals=parts(
            found.attribution(), int((found.steps["end_ns"] - found.steps["start_ns"]).sum())
        ),
        steps=step_paths(found),
        caveats=caveats(job, found, ranks) if found.steps.height else [],
    )


def critical_path(runs: Runs, steps: StepSelection | None = None) -> CriticalPathDocument:
    return CriticalPathDocument(
        **envelope(), jobs=[job_path(job, steps) for job in runs.jobs], errors=errors(runs)
    )
