"""Putting what a writer parsed into the store (under the writer lock, store/lock.py): a job's
new partitions into place, its job record and run record beside them; and which partitions in
place are whole and made from the very trace now offered, so it need not be parsed again."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path

import msgspec

from traceview.errors import TraceviewError
from traceview.parse.run_record import RUN_RECORD
from traceview.store import layout, shards
from traceview.store.completeness import accepted_summaries
from traceview.store.partition import (
    Source,
    check_current,
    check_whole,
    read_stored,
    source_of,
    summary_digest,
)
from traceview.store.shards import Shard


class JobChanges(msgspec.Struct, frozen=True):
    """What one writer did with one job's traces."""

    source: Path  # where the job's traces are: its run folder, or the lone trace
    incomplete: str | None  # why its run was incomplete (its run folder says), if it was
    run_folder: Path | None  # whose run.json is copied beside the partitions
    written: dict[Path, tuple[Path, int | None]]  # trace -> (its new partition's folder, rank)
    unchanged: dict[Path, int | None]  # trace -> the rank of its partition, up to date
    failed: dict[Path, str]  # trace -> why it could not be stored
    shard: Shard | None = None  # the part of the run this writer read (None: all of it)
    listed: int = 0  # trace files the run listed, all shards'


def commit_job(root: Path, job: str, changes: JobChanges) -> list[Path]:
    """(Under the writer lock.) The job's new partitions into place, with its records; a job
    folder this made is removed again if that fails. The partitions' folders."""
    folder = layout.job_dir(root, job)
    new_job = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise layout.cannot_write(folder, e) from None
    try:
        return _put_in_place(root, job, changes)
    except BaseException:
        if new_job:
            shutil.rmtree(folder, ignore_errors=True)  # no job is better than an empty one
        raise


def _put_in_place(root: Path, job: str, changes: JobChanges) -> list[Path]:
    folder = layout.job_dir(root, job)
    old = job_record(root, job)
    stored = {**changes.unchanged, **{t: rank for t, (_, rank) in changes.written.items()}}
    record = layout.JobRecord(
        source=str(changes.source.resolve()),
        incomplete=changes.incomplete,
        traces=merged(old, stored, changes.failed),
        shards=shards.recorded(old, changes.shard, changes.listed, job),
    )
    run_record = changes.run_folder / RUN_RECORD if changes.run_folder is not None else None
    if run_record is not None and run_record.is_file():
        run = run_record.read_bytes()
        there = folder / RUN_RECORD
        if not there.is_file() or there.read_bytes() != run:
            layout.write_atomically(there, run)
    return place(root, job, record, list(changes.written.values()), old)


def place(
    root: Path,
    job: str,
    record: layout.JobRecord,
    written: Sequence[tuple[Path, int | None]],
    old: layout.JobRecord | None,
) -> list[Path]:
    """(Under the writer lock.) The new partitions (folder, rank) into place and the job's
    record beside them (`record`, whose summary hashes are made here). The record is written
    twice: first accepting each replaced partition's summary before and after, then — the
    partitions moved — the new ones alone; so readers, which check every summary they read
    against it, find each partition readable wherever a commit stops."""
    new = {layout.rank_key(rank): summary_digest(folder) for folder, rank in written}
    kept = old.summaries if old is not None else {}
    record = msgspec.structs.replace(record, packed=old.packed if old is not None else ())
    during = {k: tuple(sorted({*kept.get(k, ()), d})) for k, d in new.items()}
    after = msgspec.structs.replace(record, summaries={**kept, **{k: (d,) for k, d in new.items()}})
    if new:
        layout.write_job_record(
            root, job, msgspec.structs.replace(record, summaries={**kept, **during})
        )
    placed = []
    for folder, rank in written:
        target = layout.partition_dir(root, job, rank)
        replace_dir(folder, target)
        placed.append(target)
    if after != old:
        layout.write_job_record(root, job, after)
    return placed


def job_record(root: Path, job: str) -> layout.JobRecord | None:
    try:
        return layout.read_job_record(root, job)
    except TraceviewError:
        return None  # a damaged record is written anew


def merged(
    old: layout.JobRecord | None, stored: dict[Path, int | None], failed: dict[Path, str]
) -> tuple[layout.StoredTrace, ...]:
    """The traces the job's ingests read: the earlier ones, then what this one stored (the
    rank of its partition) or could not (why; the rank an earlier ingest stored it as)."""
    traces = {t.trace: t for t in (old.traces if old else ())}
    for path, rank in stored.items():
        key = str(path.resolve())
        traces[key] = layout.StoredTrace(key, rank)
    for path, why in failed.items():
        key = str(path.resolve())
        before = traces.get(key)
        traces[key] = layout.StoredTrace(key, before.rank if before else None, why)
    return tuple(sorted(traces.values(), key=lambda t: t.trace))


def replace_dir(new: Path, target: Path) -> None:
    """(Under the writer lock.) `new` becomes `target`: readers see the old partition or the
    new one, never a mix (for the instant between the two renames, neither; an ingest stopped
    there leaves the old one aside, removed by the next writer, which makes it again)."""
    try:
        if target.exists():
            old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex}")
            target.rename(old)
            new.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            new.rename(target)
    except OSError as e:
        raise layout.cannot_write(target, e) from None


class Known(msgspec.Struct, frozen=True):
    """A partition of the job in place, whole, and what it was made from."""

    source: Source
    comm_pattern: str | None
    rank: int | None


def known_partitions(root: Path, job: str) -> list[Known]:
    if not layout.job_dir(root, job).is_dir():
        return []
    out = []
    places = layout.partitions(root, job)
    for folder, accepted in zip(places, accepted_summaries(places), strict=True):
        try:
            stored = read_stored(folder, accepted)
            check_current(stored, folder)
            check_whole(stored, folder)
        except TraceviewError:
            continue  # an unreadable, outdated or damaged partition is made again
        out.append(Known(stored.source, stored.comm_pattern, stored.report.rank))
    return out


def unchanged(path: Path, known: list[Known], comm_pattern: str | None) -> Known | None:
    """The partition of the job made, with the same options, from a trace of this size,
    modification time and head and tail (hashed only when the first two agree), if any."""
    try:
        stat = path.stat()
    except OSError:
        return None  # the worker says why
    candidates = [
        k
        for k in known
        if k.comm_pattern == comm_pattern
        and (k.source.size, k.source.mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    ]
    if not candidates:
        return None
    try:
        now = source_of(path)
    except TraceviewError:
        return None
    return next((k for k in candidates if k.source.same_content(now)), None)
