"""Traces into a store: each rank's trace parsed once, by a worker that writes its partition
aside (memory: one trace per worker); the partitions are moved into place here, one at a time,
each replacing the old one whole. A trace whose partition is up to date is not parsed again."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from traceview.errors import TraceviewError
from traceview.loader.engines import ENGINES, map_on_ray
from traceview.loader.parallel import Failure, guarded, map_in_processes
from traceview.loader.rank import analyze_trace
from traceview.loader.sources import RunSource, check_one_job, find_runs
from traceview.parse.run_record import RUN_RECORD, incomplete_run
from traceview.parse.source import is_stream
from traceview.parse.stream import MAX_EVENT_BYTES
from traceview.store import layout
from traceview.store.partition import (
    Source,
    check_current,
    read_stored,
    source_of,
    write_partition,
)


@dataclass(frozen=True)
class Written:
    """A partition a worker wrote (not yet in place), and what the one-job check reads."""

    trace: Path
    folder: Path
    rank: int | None
    world_size: int | None
    backend: str | None
    epoch_span_ns: tuple[int, int] | None
    recorded_strategy: str | None


IngestOutcome = Written | Failure
DoneFn = Callable[[int, int, IngestOutcome], None]


def ingest_trace(
    path: Path, folder: Path, comm_pattern: str | None, max_event_bytes: int
) -> IngestOutcome:
    """(In a worker.) Parse one trace and write its partition into `folder`."""

    def work() -> Written:
        source = source_of(path)
        report = analyze_trace(
            path, comm_pattern=comm_pattern, keep_intervals=True, max_event_bytes=max_event_bytes
        )
        write_partition(report, folder, source, comm_pattern)
        return Written(
            report.trace, folder, report.rank, report.world_size, report.backend,
            report.epoch_span_ns, report.recorded_strategy,
        )  # fmt: skip

    return guarded(path, work)


@dataclass(frozen=True)
class Ingested:
    store: Path
    jobs: tuple[str, ...]
    written: tuple[Path, ...]  # partitions (re)written
    unchanged: tuple[Path, ...]  # traces whose partitions were up to date
    failures: tuple[Failure, ...]
    skipped: tuple[Path, ...]  # JSON files in run folders that are no traces


def ingest(
    paths: Sequence[str | Path],
    store: str | Path,
    *,
    job: str | None = None,
    engine: str = "local",
    address: str | None = None,
    jobs: int | None = None,
    comm_pattern: str | None = None,
    max_event_bytes: int = MAX_EVENT_BYTES,
    on_done: DoneFn | None = None,
) -> Ingested:
    """Every run the paths name, into the store at `store` (made if need be), one job per run
    (named as RunSource.job, or `job` for a single run). `engine`: "local" (a process per core,
    or `jobs`) or "ray" (tasks on the Ray cluster at `address`; one is started on this machine
    when there is none)."""
    if engine not in ENGINES:
        raise TraceviewError(f"unknown engine {engine!r} (one of {', '.join(ENGINES)})")
    root = layout.open_store(Path(store), create=True)
    sources = _sources(paths, root)
    names = [layout.check_job_name(job)] if job is not None else [s.job for s in sources]
    if job is not None and len(sources) > 1:
        raise TraceviewError(f"--job names one run; the paths hold {len(sources)}")
    if len(set(names)) < len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise TraceviewError(
            f"two runs would be job {twice[0]!r} in the store: ingest them one at a time with "
            "--job NAME"
        )
    tasks, unchanged, owners = [], [], {}
    for source, name in zip(sources, names, strict=True):
        incoming = layout.job_dir(root, name) / layout.INCOMING / uuid.uuid4().hex
        known = _stored_sources(root, name)
        for i, path in enumerate(source.files):
            if _unchanged(path, known, comm_pattern):
                unchanged.append(path)
                continue
            tasks.append((path, incoming / str(i), comm_pattern, max_event_bytes))
            owners[path] = name
    if engine == "ray":
        outcomes = map_on_ray(ingest_trace, tasks, address, on_done)
    else:
        outcomes = map_in_processes(ingest_trace, tasks, jobs, on_done)
    failures = [o for o in outcomes if isinstance(o, Failure) and not o.not_a_trace]
    skipped = [o.path for o in outcomes if isinstance(o, Failure) and o.not_a_trace]
    written: list[Path] = []
    for source, name in zip(sources, names, strict=True):
        mine = [o for o in outcomes if isinstance(o, Written) and owners.get(o.trace) == name]
        try:
            written += _commit(root, name, source, mine)
        except TraceviewError as e:
            failures.append(Failure(source.folder or source.files[0], e.message))
        finally:
            shutil.rmtree(layout.job_dir(root, name) / layout.INCOMING, ignore_errors=True)
    return Ingested(
        store=root,
        jobs=tuple(names),
        written=tuple(written),
        unchanged=tuple(unchanged),
        failures=tuple(failures),
        skipped=tuple(skipped),
    )


def ingest_one(trace: Path, store: str | Path, job: str, comm_pattern: str | None = None) -> Path:
    """One rank's trace into its job's partition, in this process (the profiler handler, on
    the rank that wrote the trace); its partition's folder."""
    root = layout.open_store(Path(store), create=True)
    folder = layout.job_dir(root, layout.check_job_name(job))
    incoming = folder / layout.INCOMING / uuid.uuid4().hex
    try:
        outcome = ingest_trace(trace, incoming / "0", comm_pattern, MAX_EVENT_BYTES)
        if isinstance(outcome, Failure):
            raise TraceviewError(outcome.message)
        target = layout.partition_dir(root, job, outcome.rank)
        _replace_dir(outcome.folder, target)
    finally:
        shutil.rmtree(incoming, ignore_errors=True)
    if not (folder / layout.JOB_RECORD).exists():
        record = layout.JobRecord(source=str(trace.parent.resolve()))
        layout.write_atomically(folder / layout.JOB_RECORD, msgspec.json.encode(record))
    return target


def _sources(paths: Sequence[str | Path], root: Path) -> list[RunSource]:
    sources = find_runs(paths)
    for source in sources:
        if source.stored:
            raise TraceviewError(f"{source.name}: already in a store")
        for f in source.files:
            if is_stream(f):
                raise TraceviewError(f"{f}: ingest reads trace files, not streams")
            if f.resolve().is_relative_to(root.resolve()):
                raise TraceviewError(f"{f}: inside the store")
    return sources


def _stored_sources(root: Path, job: str) -> list[tuple[Source, str | None]]:
    if not layout.job_dir(root, job).is_dir():
        return []
    out = []
    for folder in layout.partitions(root, job):
        try:
            stored = read_stored(folder)
            check_current(stored, folder)
        except TraceviewError:
            continue  # an unreadable or outdated partition is made again
        out.append((stored.source, stored.comm_pattern))
    return out


def _unchanged(
    path: Path, known: list[tuple[Source, str | None]], comm_pattern: str | None
) -> bool:
    """Some partition of the job was made, with the same options, from a trace of this size,
    modification time and head and tail (hashed only when the first two agree)."""
    try:
        stat = path.stat()
    except OSError:
        return False  # the worker says why
    candidates = [
        s
        for s, pattern in known
        if pattern == comm_pattern and (s.size, s.mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    ]
    if not candidates:
        return False
    try:
        now = source_of(path)
    except TraceviewError:
        return False
    return any(s.same_content(now) for s in candidates)


def _commit(root: Path, job: str, source: RunSource, written: list[Written]) -> list[Path]:
    """The job's new partitions into place, and its job record and run record beside them.
    Refused whole when the traces cannot be one job (nothing in place changes)."""
    if source.folder is not None and written:
        check_one_job(source.folder, written)
        rankless = [w.trace.name for w in written if w.rank is None]
        if len(rankless) > 1:
            raise TraceviewError(
                f"{source.folder}: {len(rankless)} traces do not say their rank "
                f"({', '.join(rankless[:3])}); a store keeps one per job: ingest them one by one"
            )
    folder = layout.job_dir(root, job)
    folder.mkdir(parents=True, exist_ok=True)
    where = source.folder if source.folder is not None else source.files[0]
    record = layout.JobRecord(
        source=str(where.resolve()),
        incomplete=incomplete_run(source.folder) if source.folder is not None else None,
    )
    layout.write_atomically(folder / layout.JOB_RECORD, msgspec.json.encode(record))
    if source.folder is not None and (source.folder / RUN_RECORD).is_file():
        layout.write_atomically(folder / RUN_RECORD, (source.folder / RUN_RECORD).read_bytes())
    placed = []
    for w in written:
        target = layout.partition_dir(root, job, w.rank)
        _replace_dir(w.folder, target)
        placed.append(target)
    return placed


def _replace_dir(new: Path, target: Path) -> None:
    """`new` becomes `target`: readers see the old partition or the new one, never a mix (for
    the instant between the two renames, neither; an ingest stopped there makes it again)."""
    try:
        if target.exists():
            old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex}")
            target.rename(old)
            new.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            new.rename(target)
    except OSError as e:
        raise layout.cannot_write(target, e) from None
