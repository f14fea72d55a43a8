"""The front door: paths (traces, run folders, sweeps, stores, folders of them) -> Runs of Jobs,
each rank parsed once, in parallel, or read from its store partition."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from traceview.analysis.rank import RankReport
from traceview.errors import Note, TraceviewError
from traceview.inputs import ProgressFn
from traceview.loader.cycles import ranks_of
from traceview.loader.gather import gathered, said_missing
from traceview.loader.job import Job, Runs
from traceview.loader.parallel import DoneFn, Failure, Options, analyze_many, not_finished
from traceview.loader.sources import RunSource, check_one_job, find_runs, listed_again
from traceview.loader.stored import read_partitions
from traceview.parse.run_record import incomplete_run
from traceview.store import lock
from traceview.store.completeness import stored_incomplete


def load_runs(
    paths: Sequence[str | Path],
    *,
    comm_pattern: str | None = None,
    keep_intervals: bool | int = False,
    max_event_bytes: int | None = None,
    max_memory_bytes: int | None = None,
    link_gbps: float | None = None,
    jobs: int | None = None,
    within: Path | None = None,
    job: str | None = None,
    on_done: DoneFn | None = None,
    progress: ProgressFn | None = None,
    before: Callable[[list[RunSource]], None] | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> Runs:
    """Every run the paths name (traces, run folders, sweeps, stores, folders of them), each
    rank parsed once, in parallel (`jobs` processes; default: one per core), or read from its
    store partition. `within`: read nothing outside this folder. `job`: only the runs of that
    name. `before(sources)` is called once they are known (to refuse an output file that is one
    of them, or say what is coming). `link_gbps`: the peak per direction of the link the
    collectives ran on, where the traces cannot tell (docs/metrics.md "Against the link's
    peak"). `on_wait` is told who holds a store being read, once, when a commit makes this
    wait."""
    sources = find_runs(paths, within=within, job=job)
    if before is not None:
        before(sources)
    files = [f for s in sources if not s.stored for f in s.files]
    options = Options(
        comm_pattern=comm_pattern,
        keep_intervals=keep_intervals,
        max_memory_bytes=max_memory_bytes,
        link_gbps=link_gbps,
    )
    if max_event_bytes is not None:
        options = msgspec.structs.replace(options, max_event_bytes=max_event_bytes)
    outcomes = dict(
        zip(
            files,
            analyze_many(files, options=options, jobs=jobs, on_done=on_done, progress=progress),
            strict=True,
        )
    )
    loaded: list[Job] = []
    failures: list[Failure] = []
    skipped: list[Path] = []
    # Stored jobs are listed again and read under their stores' lock: one commit's each.
    stores = [s.folder.parent for s in sources if s.stored and s.folder is not None]
    with lock.reading(stores, on_wait=on_wait):
        sources = [listed_again(s, within) for s in sources]
        partitions = [f for s in sources if s.stored for f in s.files]
        outcomes |= zip(partitions, read_partitions(partitions, options, on_done), strict=True)
        for source in sources:
            if source.folder is not None and source.unfinished is not None:
                failures.append(not_finished(source.folder, source.unfinished))
                continue
            for part in _parts(source):
                made = _job(part, outcomes, options, failures, skipped)
                if made is not None:
                    loaded.append(made)
    found = tuple(said_missing(job) for job in gathered(loaded))
    return Runs(jobs=found, failures=tuple(failures), skipped=tuple(skipped))


def _parts(source: RunSource) -> list[RunSource]:
    """A run listed from sub-folders of one world, a job per sub-folder (gathered() joins them
    where they ran together); any other run as it is."""
    return [
        RunSource(part, tuple(f for f in source.files if f.parent == part)) for part in source.parts
    ] or [source]


def _job(
    source: RunSource,
    outcomes: dict[Path, RankReport | Failure],
    options: Options,
    failures: list[Failure],
    skipped: list[Path],
) -> Job | None:
    """The source's job from its traces' outcomes; what failed goes to `failures`, JSON files
    that are no traces to `skipped`."""
    read = [f for f in source.files if isinstance(outcomes[f], RankReport)]
    reports, read_from = ranks_of([outcomes[f] for f in read], read)  # type: ignore[misc]
    for f in source.files:
        if isinstance(o := outcomes[f], Failure):
            if o.not_a_trace and source.folder is not None:
                skipped.append(f)
            else:
                failures.append(o)
    if source.folder is not None:
        check_one_job(source.folder, reports)
        why = (
            stored_incomplete(source.folder, source.files)
            if source.stored
            else incomplete_run(source.folder)
        )
        if why:
            # said on every rank it concerns
            note = Note(message=why, severity="lossy")
            reports = [msgspec.structs.replace(r, notes=(*r.notes, note)) for r in reports]
            if not reports:
                failures.append(Failure(source.folder, f"{source.folder}: {why}"))
    if not reports:
        return None
    mine = tuple(o for f in source.files if isinstance(o := outcomes[f], Failure))
    return Job(
        folder=source.folder,
        ranks=tuple(reports),
        failures=mine,
        rank_files=tuple(read_from),
        stored=source.stored,
        options=options,
    )


def load(path: str | Path, **options: object) -> Job:
    """One run: a trace, or a folder of one job's rank traces (options as for load_runs).
    Raises TraceviewError when nothing could be read or the path holds several runs."""
    runs = load_runs([path], **options)  # type: ignore[arg-type]
    if not runs.jobs:
        raise TraceviewError(runs.failures[-1].message if runs.failures else f"{path}: no traces")
    if len(runs.jobs) > 1:
        raise TraceviewError(
            f"{path}: holds {len(runs.jobs)} runs; load them with traceview.load_runs"
        )
    return runs.jobs[0]
