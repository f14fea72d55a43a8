"""One run written into several folders, read as one job again:
- on several hosts, each rank's trace into its own host's folder, the folders named together
  (docs/harness.md "Several hosts"): the harness writes the launch's identity into every trace
  (TraceRun.run_id); jobs whose every trace names the same launch, holding different ranks of
  one world, are gathered into one, whose folder is the one holding the run record (rank 0's);
- a user's script writing each rank's traces into a folder of its own (`rank0/`, `rank1/`):
  sibling folders each holding part of one world — the same world size, backend and no
  launch, different ranks, profiled at the same time — are one job, in their parent folder."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from traceview.errors import Note, TraceviewError
from traceview.loader.sources import ran_together
from traceview.parse.run_record import RUN_RECORD
from traceview.plain import counted, noun, number_runs
from traceview.store import layout, shards

if TYPE_CHECKING:
    from traceview.loader.job import Job


def launch_of(job: Job) -> str | None:
    """The launch every rank of the job names; None where one names none or they differ."""
    ids = {r.run.run_id if r.run is not None else None for r in job.ranks}
    return ids.pop() if len(ids) == 1 else None


def gathered(jobs: list[Job]) -> list[Job]:
    """The jobs, those of one launch, or one world's ranks in sibling folders, made one (in
    the first one's place)."""
    keys = [_key(j) for j in jobs]
    groups: dict[tuple[str, ...], list[Job]] = defaultdict(list)
    for job, key in zip(jobs, keys, strict=True):
        if key is not None:
            groups[key].append(job)
    out, done = [], set()
    for job, key in zip(jobs, keys, strict=True):
        parts = groups.get(key, []) if key is not None else []
        if len(parts) < 2 or not _one_world(parts):
            out.append(job)
        elif key not in done:
            done.add(key)
            out.append(_one(parts, key))  # type: ignore[arg-type]
    return out


def _key(job: Job) -> tuple[str, ...] | None:
    """What the job's folders are gathered by: its launch, else — for part of a world — its
    parent folder."""
    if job.folder is None or job.stored:
        return None
    launch = launch_of(job)
    if launch is not None:
        return ("launch", launch)
    worlds = {r.world_size for r in job.ranks}
    world = worlds.pop() if len(worlds) == 1 else None
    if world is None or len(job.ranks) >= world or (job.folder / RUN_RECORD).exists():
        return None
    return ("parent", str(job.folder.parent))


def _one_world(parts: list[Job]) -> bool:
    return ran_together([r for job in parts for r in job.ranks])


def _one(parts: list[Job], key: tuple[str, ...]) -> Job:
    home = next((j for j in parts if j.folder and (j.folder / RUN_RECORD).exists()), parts[0])
    folders = ", ".join(str(j.folder) for j in parts)
    if key[0] == "launch":
        said = f"gathered from {len(parts)} folders of one launch ({key[1]}): {folders}"
    else:
        home = msgspec.structs.replace(home, folder=Path(key[1]))
        said = f"gathered from {len(parts)} folders, each holding some ranks: {folders}"
    note = Note(message=said)
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
    """A run folder whose record names ranks its traces are not — or, without a record, whose
    traces' world size counts ranks none of them is: each rank says which are elsewhere, so no
    figure passes for the whole job's."""
    if job.folder is None:
        return job
    record = _record(job)
    if record is not None and shards.missing(record.shards):
        return _noted(job, _shards_note(record.shards))  # type: ignore[arg-type]
    ingested = _ingested(record)
    if ingested is None:  # a trace stored on its own: said of as read on its own, not at all
        return job
    if not (job.folder / RUN_RECORD).exists():
        return _world_missing(job, ingested)
    try:
        run = job.run
    except TraceviewError:
        return job  # said where the record is read
    have = {r.rank for r in job.ranks} | ingested
    away = [r for r in (run.ranks if run else []) if r.rank not in have]
    if not away:
        return job
    where = ", ".join(f"{r.rank} ({r.host})" if r.host else str(r.rank) for r in away)
    note = Note(
        message=f"the run record names {counted(len(run.ranks) if run else 0, 'rank')}, and "
        f"{noun(len(away), 'rank')} {where} {noun(len(away), 'is', 'are')} not among these "
        f"traces: {_how_to_add(job)}",
        severity="caveat",
    )
    return _noted(job, note)


def _world_missing(job: Job, ingested: set[int | None]) -> Job:
    """Traces alone: one world size, every rank known, some ranks of it without a trace."""
    worlds = {r.world_size for r in job.ranks}
    have = {r.rank for r in job.ranks}
    world = worlds.pop() if len(worlds) == 1 else None
    if world is None or None in have or len(have) >= world:
        return job
    away = sorted(set(range(world)) - have - ingested)  # type: ignore[arg-type]
    if not away:
        return job
    note = Note(
        message=f"the traces say world size {world}, and {noun(len(away), 'rank')} "
        f"{number_runs(away)} {noun(len(away), 'has', 'have')} no trace among them: figures "
        f"across ranks cover the {counted(len(have), 'rank')} read",
        severity="caveat",
    )
    return _noted(job, note)


def _record(job: Job) -> layout.JobRecord | None:
    """A stored job's record (None for traces, or where it cannot be read: said elsewhere)."""
    if not job.stored or job.folder is None:
        return None
    try:
        return layout.read_job_record(
            job.folder.parent, job.folder.name.removeprefix(layout.JOB_PREFIX)
        )
    except TraceviewError:
        return None


def _ingested(record: layout.JobRecord | None) -> set[int | None] | None:
    """A stored job's ranks its ingests stored or failed to (what the store says of them, a
    partition gone included: store/completeness.py), so that only ranks never ingested are said
    here; None for a trace stored on its own."""
    if record is None:
        return set()
    if record.source.endswith((".json", ".json.gz")):
        return None
    return {t.rank for t in record.traces}


def _shards_note(done: layout.Shards) -> Note:
    left = shards.missing(done)
    return Note(
        message=f"the job is being ingested in {done.of} shards and {noun(len(left), 'shard')} "
        f"{number_runs(left)} {noun(len(left), 'is', 'are')} not in the store yet, so every "
        f"figure across ranks leaves out their ranks: {shards.how_to_add(done)}",
        severity="caveat",
    )


def _how_to_add(job: Job) -> str:
    if job.stored:
        return (
            "ingest each host's folder into this job (--job NAME), or ingest with --engine ray "
            "on the cluster (docs/store.md)"
        )
    return (
        "a job written on several hosts is read by naming each host's folder together "
        "(docs/harness.md)"
    )


def _noted(job: Job, note: Note) -> Job:
    """`note` on every rank of the job (each output shows it with the ranks it holds for)."""
    return msgspec.structs.replace(
        job, ranks=tuple(msgspec.structs.replace(r, notes=(*r.notes, note)) for r in job.ranks)
    )
