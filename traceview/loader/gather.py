"""One run written on several hosts, each rank's trace into its own host's folder: the folders
named together are one job again (docs/harness.md "Several hosts"). The harness writes the
launch's identity into every trace (TraceRun.run_id); jobs whose every trace names the same
launch, holding different ranks, are gathered into one, whose folder is the one holding the run
record (rank 0's)."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import msgspec

from traceview.errors import Note, TraceviewError
from traceview.parse.run_record import RUN_RECORD

if TYPE_CHECKING:
    from traceview.loader.job import Job


def launch_of(job: Job) -> str | None:
    """The launch every rank of the job names; None where one names none or they differ."""
    ids = {r.run.run_id if r.run is not None else None for r in job.ranks}
    return ids.pop() if len(ids) == 1 else None


def gathered(jobs: list[Job]) -> list[Job]:
    """The jobs, those of one launch in several folders made one (in the first one's place)."""
    launches = [launch_of(j) if j.folder is not None and not j.stored else None for j in jobs]
    groups: dict[str, list[Job]] = defaultdict(list)
    for job, launch in zip(jobs, launches, strict=True):
        if launch is not None:
            groups[launch].append(job)
    out, done = [], set()
    for job, launch in zip(jobs, launches, strict=True):
        parts = groups.get(launch, []) if launch is not None else []
        if len(parts) < 2 or not _disjoint(parts):
            out.append(job)
        elif launch not in done:
            done.add(launch)
            out.append(_one(parts, launch))  # type: ignore[arg-type]
    return out


def _disjoint(parts: list[Job]) -> bool:
    ranks = [r.rank for job in parts for r in job.ranks]
    return None not in ranks and len(ranks) == len(set(ranks))


def _one(parts: list[Job], launch: str) -> Job:
    home = next((j for j in parts if j.folder and (j.folder / RUN_RECORD).exists()), parts[0])
    folders = ", ".join(str(j.folder) for j in parts)
    note = Note(message=f"gathered from {len(parts)} folders of one launch ({launch}): {folders}")
    pairs = sorted(
        ((r, f) for j in parts for r, f in zip(j.ranks, j.rank_files, strict=True)),
        key=lambda pair: pair[0].rank or 0,
    )
    return msgspec.structs.replace(
        home,
        ranks=tuple(msgspec.structs.replace(r, notes=(*r.notes, note)) for r, _ in pairs),
        rank_files=tuple(f for _, f in pairs),
        failures=tuple(f for j in parts for f in j.failures),
    )


def said_missing(job: Job) -> Job:
    """A run folder whose record names ranks its traces are not: each rank says which are
    elsewhere (another host's folder), so no figure passes for the whole job's."""
    if job.folder is None or job.stored or not (job.folder / RUN_RECORD).exists():
        return job
    try:
        run = job.run
    except TraceviewError:
        return job  # said where the record is read
    have = {r.rank for r in job.ranks}
    away = [r for r in (run.ranks if run else []) if r.rank not in have]
    if not away:
        return job
    where = ", ".join(f"{r.rank} ({r.host})" if r.host else str(r.rank) for r in away)
    note = Note(
        message=f"the run record names {len(run.ranks) if run else 0} ranks, and rank(s) "
        f"{where} are not among these traces: a job written on several hosts is read by naming "
        "each host's folder together (docs/harness.md)",
        severity="caveat",
    )
    return msgspec.structs.replace(
        job, ranks=tuple(msgspec.structs.replace(r, notes=(*r.notes, note)) for r in job.ranks)
    )
