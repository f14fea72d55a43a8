"""Traces into a store: each rank's trace parsed once, by a worker that writes its partition
into this ingest's own folder (memory: one large trace, or a few small ones modelled together,
per worker: loader/parallel.py together); then, under the store's writer
lock (store/lock.py), the partitions are moved into place, each replacing the old one whole, and
each job's record says which traces its ingests read. A trace whose partition is up to date and
whole is not parsed again."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path

import msgspec

from traceview import preload
from traceview.analysis.rank import RankReport
from traceview.errors import CannotWrite, TraceviewError
from traceview.inputs import is_stream
from traceview.loader.cycles import refuse_cycles
from traceview.loader.engines import ENGINES, map_on_ray
from traceview.loader.on_nodes import NodeIngest, ingest_on_nodes, lacks_ranks
from traceview.loader.parallel import (
    Failure,
    Options,
    crashed,
    guarded,
    in_order,
    not_finished,
    per_trace,
    reports_together,
    together,
)
from traceview.loader.sources import RunSource, check_one_job, find_runs, ran_together
from traceview.loader.workers import map_in_processes
from traceview.parse.run_record import incomplete_run
from traceview.parse.stream import MAX_EVENT_BYTES
from traceview.remote import is_remote, is_url, local_only
from traceview.store import commit, layout, lock, shards
from traceview.store.bucket import open_to_write, writing
from traceview.store.pack import PACK_FROM_RANKS, pack_job
from traceview.store.partition import Source, source_of, write_partition
from traceview.store.shards import Shard, files_of

WaitFn = Callable[[str], None]  # told who holds the store, once, when a writer starts waiting


class Written(msgspec.Struct, frozen=True):
    """A partition a worker wrote (not yet in place), and what the one-job check reads."""

    trace: Path
    folder: Path
    rank: int | None
    world_size: int | None
    backend: str | None
    epoch_span_ns: tuple[int, int] | None
    recorded_strategy: str | None
    losses: tuple[str, ...]  # what the trace lost (its lossy notes), said as analyze says it


IngestOutcome = Written | Failure
DoneFn = Callable[[int, int, IngestOutcome], None]


def ingest_traces(
    paths: list[Path],
    folders: list[Path],
    comm_pattern: str | None,
    max_event_bytes: int,
    max_memory_bytes: int | None = None,
) -> list[IngestOutcome]:
    """(In a worker.) Parse these traces, modelled and measured together
    (loader/parallel.py), and write each one's partition into its folder."""
    # Each source is described before its trace is read: a trace that changes while it is
    # read is then found changed by the next ingest, never taken as stored.
    sources = [guarded(p, partial(source_of, p)) for p in paths]
    done: dict[int, IngestOutcome] = {i: s for i, s in enumerate(sources) if isinstance(s, Failure)}
    readable = [i for i in range(len(paths)) if i not in done]
    options = Options(
        comm_pattern=comm_pattern,
        keep_intervals=True,
        max_event_bytes=max_event_bytes,
        max_memory_bytes=max_memory_bytes,
    )
    reports = reports_together([paths[i] for i in readable], options)
    for i, report in zip(readable, reports, strict=True):
        source = sources[i]
        assert not isinstance(source, Failure)
        done[i] = (
            report
            if isinstance(report, Failure)
            else guarded(paths[i], partial(_written, report, folders[i], source, comm_pattern))
        )
    return [done[i] for i in range(len(paths))]


def _written(report: RankReport, folder: Path, source: Source, comm_pattern: str | None) -> Written:
    write_partition(report, folder, source, comm_pattern)
    return Written(
        report.trace, folder, report.rank, report.world_size, report.backend,
        report.epoch_span_ns, report.recorded_strategy,
        tuple(n.message for n in report.notes if n.lossy),
    )  # fmt: skip


class Ingested(msgspec.Struct, frozen=True):
    store: Path
    jobs: tuple[str, ...]
    written: tuple[Path, ...]  # partitions (re)written
    unchanged: tuple[Path, ...]  # traces whose partitions were up to date
    failures: tuple[Failure, ...]
    skipped: tuple[Path, ...]  # JSON files in run folders that are no traces
    losses: tuple[tuple[Path, str], ...] = ()  # (trace, what it lost), for written partitions


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
    max_memory_bytes: int | None = None,
    on_done: DoneFn | None = None,
    on_wait: WaitFn | None = None,
    on_engine: WaitFn | None = None,
    shard: Shard | None = None,
) -> Ingested:
    """Every run the paths name, into the store at `store` (made if need be), one job per run
    (named as RunSource.job, or `job` for a single run). `engine`: "local" (a process per core,
    or `jobs`) or "ray" (tasks on the Ray cluster at `address`; one is started on this machine
    when there is none). Other writers may run at once: each parses on its own and they move
    their partitions into place one at a time. `on_engine` is told what starting the engine
    cost (Ray's start-up). `shard`: only that part of each run's traces (store/shards.py)."""
    if engine not in ENGINES:
        raise TraceviewError(f"unknown engine {engine!r} (one of {', '.join(ENGINES)})")
    if shard is not None and engine == "ray":
        raise TraceviewError(
            "--shard splits an ingest among a scheduler's tasks; --engine ray splits it itself: "
            "use one or the other"
        )
    in_bucket = is_url(store)
    if in_bucket and engine == "ray":
        raise TraceviewError(
            f"{store}: Ray's workers write partitions into the store's own folder, which a "
            "bucket has not: ingest into a bucket with the local engine, or with --shard tasks"
        )
    root = open_to_write(store, create=True)
    away = [  # (not here, or not all here: on the cluster's nodes' own disks)
        str(p)
        for p in paths
        if engine == "ray"
        and not is_url(p)  # object storage: the same from every node
        and not is_stream(Path(p))
        and (not Path(p).exists() or lacks_ranks(Path(p)))
    ]
    if away:  # ingested where they are
        options: dict[str, object] = {"job": job, "comm_pattern": comm_pattern,
                                      "max_event_bytes": max_event_bytes,
                                      "max_memory_bytes": max_memory_bytes}  # fmt: skip
        done = ingest_on_nodes(away, root, address, options, on_ready=on_engine)
        here = [p for p in paths if str(p) not in away]
        made_here = [
            ingest(here, root, job=job, engine=engine, address=address, comm_pattern=comm_pattern,
                   max_event_bytes=max_event_bytes, max_memory_bytes=max_memory_bytes,
                   on_done=on_done, on_wait=on_wait)
        ] if here else []  # fmt: skip
        return _joined(root, made_here, done)
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
    with writing(root) as place:  # (a store in a bucket: a stage on disk, published after)
        target, incoming = place.target, place.incoming
        tasks, unchanged = [], {}
        for source, name in zip(sources, names, strict=True):
            with lock.reading([target], on_wait=on_wait):  # not while a commit is under way
                place.copy(name)
                known = commit.known_partitions(target, name)
                if shard is not None:  # another N than the job's shards so far: before any work
                    shards.recorded(commit.job_record(target, name), shard, len(source.files), name)
            mine = source.files if shard is None else files_of(source.files, shard)
            for i, path in enumerate(mine):
                found = commit.unchanged(path, known, comm_pattern)
                if found is not None:
                    unchanged[path] = found.rank
                    continue
                tasks.append((path, incoming / name / str(i)))
        outcomes = _ingested(tasks, engine, address, jobs, comm_pattern, max_event_bytes,
                             max_memory_bytes, on_done, on_engine)  # fmt: skip
        unwritable = [o.cannot_write for o in outcomes if isinstance(o, Failure) and o.cannot_write]
        if unwritable:  # a full disk, say: nothing goes into place
            raise TraceviewError(
                f"{target}: cannot write ({unwritable[0]}); nothing in the store was changed"
            )
        by_trace = {task[0]: o for task, o in zip(tasks, outcomes, strict=True)}
        with place.committing(names, on_wait):
            written, failures, skipped = _commit_jobs(
                target, zip(sources, names, strict=True), by_trace, unchanged, shard
            )
            for name in names:  # a job of many ranks is read as a handful of files
                if layout.job_dir(target, name).is_dir():  # (in a bucket: every job, whole)
                    pack_job(target, name, incoming, 0 if in_bucket else PACK_FROM_RANKS)
        written = tuple(root / w.relative_to(target) for w in written)
    return Ingested(
        store=root,
        jobs=tuple(names),
        written=written,
        unchanged=tuple(unchanged),
        failures=failures,
        skipped=skipped,
        losses=tuple(
            (o.trace, loss) for o in outcomes if isinstance(o, Written) for loss in o.losses
        ),
    )


def _ingested(
    tasks: list[tuple[Path, Path]],
    engine: str,
    address: str | None,
    jobs: int | None,
    comm_pattern: str | None,
    max_event_bytes: int,
    max_memory_bytes: int | None,
    on_done: DoneFn | None,
    on_engine: WaitFn | None,
) -> list[IngestOutcome]:
    """Each (trace, its partition's folder)'s outcome, in order: the small traces a few to a
    worker (loader/parallel.py together), each told of as it is done."""
    paths = [path for path, _ in tasks]
    workers = max(1, min(len(tasks), jobs or preload.cores()))
    groups = together(paths, workers)
    batches = [([tasks[i][0] for i in g], [tasks[i][1] for i in g], comm_pattern,
                max_event_bytes, max_memory_bytes) for g in groups]  # fmt: skip
    each_group = per_trace(on_done, len(tasks))
    found: list[Sequence[IngestOutcome]]
    if engine == "ray":
        found = map_on_ray(
            ingest_traces, batches, address, each_group, on_crash=crashed, on_ready=on_engine
        )
    else:
        found = map_in_processes(ingest_traces, batches, jobs, each_group, on_crash=crashed)
    return in_order(groups, found)


def _joined(root: Path, found: list[Ingested], nodes: list[NodeIngest]) -> Ingested:
    """One account of ingests made here and on the cluster's nodes (a node that failed: each
    of its paths a failure; its input lost where the node's task died)."""
    parts = found + [n.result for n in nodes if n.result is not None]
    lost = tuple(
        Failure(Path(path), f"{path}: on node {n.node}: {n.failed}", lost=n.crashed)
        for n in nodes
        if n.failed is not None
        for path in n.paths
    )
    return Ingested(
        store=root,
        jobs=tuple(dict.fromkeys(j for i in parts for j in i.jobs)),
        written=tuple(w for i in parts for w in i.written),
        unchanged=tuple(u for i in parts for u in i.unchanged),
        failures=tuple(f for i in parts for f in i.failures) + lost,
        skipped=tuple(k for i in parts for k in i.skipped),
        losses=tuple(loss for i in parts for loss in i.losses),
    )


def _commit_jobs(
    root: Path,
    jobs: Iterable[tuple[RunSource, str]],
    by_trace: dict[Path, IngestOutcome],
    unchanged: dict[Path, int | None],
    shard: Shard | None = None,
) -> tuple[tuple[Path, ...], tuple[Failure, ...], tuple[Path, ...]]:
    """(Under the writer lock.) Each job's outcome into place: the partitions written, the
    failures, the files skipped."""
    failures: list[Failure] = []
    skipped: list[Path] = []
    written: list[Path] = []
    committed: list[str] = []
    for source, name in jobs:
        if source.folder is not None and source.unfinished is not None:
            failures.append(not_finished(source.folder, source.unfinished))
            continue
        done = [by_trace[f] for f in source.files if f in by_trace]
        mine = [o for o in done if isinstance(o, Written)]
        failed = [o for o in done if isinstance(o, Failure)]
        for f in failed:  # a file that is no trace, in a run folder: skipped
            if f.not_a_trace and source.folder is not None:
                skipped.append(f.path)
            else:
                failures.append(f)
        kept = {f: unchanged[f] for f in source.files if f in unchanged}
        lost = [f for f in failed if not f.not_a_trace]  # the job's traces not stored
        if not (mine or kept or lost):
            continue  # (a shard given none of this run's files is never waited for: shards.missing)
        try:
            written += _commit(root, name, source, mine, kept, lost, shard)
            committed.append(name)
        except CannotWrite as e:
            # Each job goes into place whole or not at all: say which ones already did.
            stored = f"{', '.join(committed)} stored" if committed else "no job stored"
            raise CannotWrite(
                root,
                f"{e.reason}; {stored}, {name} and the jobs after it not changed: make room "
                "and run the same ingest again",
            ) from None
        except TraceviewError as e:
            failures.append(Failure(source.folder or source.files[0], e.message))
    return tuple(written), tuple(failures), tuple(skipped)


class StoredRank(msgspec.Struct, frozen=True):
    """A rank's trace in its job's partition (ingest_one)."""

    folder: Path  # the partition
    completes: int | None  # the job's ranks, where this commit stored its last; else None


def ingest_one(
    trace: Path, store: str | Path, job: str, comm_pattern: str | None = None
) -> StoredRank:
    """One rank's trace into its job's partition, in this process (the profiler handler, on
    the rank that wrote the trace). The job's other ranks may be storing theirs at the same
    time. A trace that cannot be stored is recorded as such (the job, read, says so) and
    raised."""
    local_only(
        store,
        "the profiler handler stores each rank's trace as it is written, into a store on a file "
        "system",
        "ingest the run's traces into the bucket's store when it is done (traceview ingest "
        "FOLDER --store s3://…)",
    )
    root = layout.open_store(Path(store), create=True)
    layout.check_job_name(job)
    with lock.own_folder(root) as incoming:
        (outcome,) = ingest_traces([trace], [incoming / "0"], comm_pattern, MAX_EVENT_BYTES)
        with lock.writer(root):
            try:
                layout.job_dir(root, job).mkdir(exist_ok=True)
            except OSError as e:
                raise layout.cannot_write(root, e) from None
            stored: dict[Path, int | None] = {}
            written: list[tuple[Path, int | None]] = []
            if isinstance(outcome, Written):
                stored[trace] = outcome.rank
                written.append((outcome.folder, outcome.rank))
            old = commit.job_record(root, job)
            failed = {outcome.path: outcome.message} if isinstance(outcome, Failure) else {}
            record = layout.JobRecord(
                source=old.source if old else str(trace.parent.resolve()),
                incomplete=old.incomplete if old else None,
                traces=commit.merged(old, stored, failed),
            )
            commit.place(root, job, record, written, old)
    if isinstance(outcome, Failure):
        raise TraceviewError(outcome.message)
    folder = layout.partition_dir(root, job, outcome.rank)
    return StoredRank(folder, _completed(old, record, outcome))


def _completed(
    old: layout.JobRecord | None, record: layout.JobRecord, written: Written
) -> int | None:
    """The job's world size, where this rank's first commit made every rank of it stored;
    else None (a rank stored again, a cycle of a repeating schedule, completes nothing: only
    the first cycle's last rank does, once)."""
    world = written.world_size
    if world is None or written.rank is None:
        return None
    before = {t.rank for t in old.traces if t.failed is None} if old else set()
    after = {t.rank for t in record.traces if t.failed is None}
    whole = after.issuperset(range(world))
    return world if whole and written.rank not in before else None


def _sources(paths: Sequence[str | Path], root: Path) -> list[RunSource]:
    sources = find_runs(paths)
    for source in sources:
        if source.stored:
            raise TraceviewError(f"{source.name}: already in a store")
        for f in source.files:
            if is_stream(f):
                raise TraceviewError(f"{f}: ingest reads trace files, not streams")
            if is_remote(f) == is_remote(root) and f.resolve().is_relative_to(root.resolve()):
                raise TraceviewError(f"{f}: inside the store")
    return sources


def _refuse_ranks_stored_from_others(
    root: Path, job: str, source: RunSource, written: list[Written]
) -> None:
    """A shard's rank that another shard stored from another of the run's files: the run holds
    that rank twice (what check_one_job says of one ingest's traces)."""
    old = commit.job_record(root, job)
    listed = {str(f.resolve()) for f in source.files}
    by_rank = {t.rank: t.trace for t in (old.traces if old else ()) if t.trace in listed}
    for w in written:
        other = by_rank.get(w.rank)
        if w.rank is not None and other is not None and other != str(w.trace.resolve()):
            raise TraceviewError(
                f"{source.folder}: rank {w.rank} is in both {Path(other).name} and "
                f"{w.trace.name}: one trace per rank"
            )


def _commit(
    root: Path,
    job: str,
    source: RunSource,
    written: list[Written],
    unchanged: dict[Path, int | None],
    failed: list[Failure],
    shard: Shard | None = None,
) -> list[Path]:
    """(Under the writer lock.) One job's outcome into the store; refused whole when its traces
    cannot be one job (nothing in place changes)."""
    if source.folder is not None and written:
        refuse_cycles(source.folder, written)
        check_one_job(source.folder, written)
        if source.parts and not ran_together(written):
            raise TraceviewError(
                f"{source.folder}: its sub-folders hold ranks of one world size that were not "
                "profiled together: ingest each sub-folder on its own (--job NAME each)"
            )
        if shard is not None:
            _refuse_ranks_stored_from_others(root, job, source, written)
        rankless = [w.trace.name for w in written if w.rank is None]
        if len(rankless) > 1:
            raise TraceviewError(
                f"{source.folder}: {len(rankless)} traces do not say their rank "
                f"({', '.join(rankless[:3])}); a store keeps one per job: ingest them one by one"
            )
    changes = commit.JobChanges(
        source=source.folder if source.folder is not None else source.files[0],
        incomplete=incomplete_run(source.folder) if source.folder is not None else None,
        run_folder=source.folder,
        written={w.trace: (w.folder, w.rank) for w in written},
        unchanged=unchanged,
        failed={f.path: f.message for f in failed},
        shard=shard,
        listed=len(source.files),
    )
    return commit.commit_job(root, job, changes)
