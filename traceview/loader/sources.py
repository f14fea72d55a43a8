"""Which traces a PATH names, grouped into runs: a trace file (or a stream) on its own, a
folder of one job's rank traces, a sweep (its `index.json`, confined to its folder), a trace
store (its jobs' rank partitions), or any folder of such folders. The one trace-file rule, the
one job-name rule, and the one-job check."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import msgspec

from traceview.errors import TraceviewError
from traceview.inputs import STDIN, is_stream
from traceview.loader.peek import peek
from traceview.parse.run_record import RUN_RECORD, STATUS_GLOB, read_sweep_index
from traceview.remote import as_path
from traceview.store import layout

TRACE_SUFFIXES = (".json", ".json.gz")
NOT_TRACES = {"run.json", "index.json"}  # the harness's own records live beside its traces
STATUS_SUFFIX = ".status.json"  # and, while a run is going (or if it stopped), each rank's
SWEEP_INDEX = "index.json"
# Ranks of one job are profiled together; their wall-clock spans cannot be this far apart.
SAME_JOB_SLACK_NS = 10 * 60 * 10**9


def is_trace_file(path: Path) -> bool:
    """The trace-file rule: a .json or .json.gz file, not one of the harness's records."""
    name = path.name
    return (
        name.endswith(TRACE_SUFFIXES)
        and name not in NOT_TRACES
        and not name.endswith(STATUS_SUFFIX)
        and not name.startswith(".")
        and path.is_file()
    )


class RunSource(msgspec.Struct, frozen=True):
    """One run's traces: a folder of one job's rank traces, one trace named on its own, or a
    job in a trace store (`stored`: its `files` are the ranks' partitions)."""

    folder: Path | None  # None for a trace (or stream) named on its own
    files: tuple[Path, ...]  # empty for a run folder that stopped before writing a trace
    stored: bool = False
    unfinished: str | None = None  # a sweep's point that did not finish: why (not read)
    # Sub-folders each holding some ranks of one world (rank0/, rank1/): listed as one run,
    # loaded part by part and gathered (loader/gather.py), which checks they ran together.
    parts: tuple[Path, ...] = ()

    @property
    def name(self) -> str:
        return str(self.folder if self.folder is not None else self.files[0])

    @property
    def job(self) -> str:
        """The job's name (what `--job` selects): its folder's name, a lone trace's name
        without its suffixes, characters a store cannot hold as '_'."""
        if self.stored and self.folder is not None:
            return self.folder.name.removeprefix(layout.JOB_PREFIX)
        if self.folder is not None:
            name = self.folder.resolve().name
        else:
            name = re.sub(r"(\.pt\.trace)?\.json(\.gz)?$", "", self.files[0].name)
        return re.sub(r"[^A-Za-z0-9._+-]", "_", name).lstrip("._+-")[:200] or "job"


def find_runs(
    paths: Sequence[str | Path],
    *,
    within: Path | None = None,
    empty_ok: bool = False,
    job: str | None = None,
) -> list[RunSource]:
    """Every run the paths name, in order. `within`: a folder nothing may be read outside of
    (the dashboard's root): links out of it are not followed. A folder with no traces is an
    error unless `empty_ok`. `job`: only the runs of that name (see RunSource.job)."""
    runs: list[RunSource] = []
    for raw in paths:
        path = as_path(raw)
        if str(raw) == STDIN or (path.exists() and not path.is_dir()) or is_stream(path):
            runs.append(RunSource(None, (path,)))
        elif path.is_dir():
            found = _folder_runs(path, within)
            if not found and not empty_ok:
                raise TraceviewError(
                    f"{path}: no trace files (*.json, *.json.gz) here or below; name the folder "
                    "torch.profiler wrote into (tensorboard_trace_handler's) or a trace"
                )
            runs += found
        else:
            raise TraceviewError(f"{path}: no such file or folder")
    if job is not None:
        chosen = [r for r in runs if r.job == job]
        if not chosen:
            names = sorted({r.job for r in runs})
            shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
            raise TraceviewError(f"no job named {job!r} in {', '.join(map(str, paths))} ({shown})")
        runs = chosen
    return runs


def _inside(path: Path, within: Path | None) -> bool:
    return within is None or path.resolve().is_relative_to(within.resolve())


def _folder_runs(folder: Path, within: Path | None) -> list[RunSource]:
    """A store's jobs, a sweep's runs (from its index), or the folder as one job, or the runs
    below it."""
    if layout.is_store(folder):
        return _stored_runs(folder, within)
    if folder.name.startswith(layout.JOB_PREFIX) and layout.is_store(
        folder.parent
    ):  # one job of a store
        return [_stored_run(folder.parent, folder.name.removeprefix(layout.JOB_PREFIX), within)]
    if (folder / SWEEP_INDEX).is_file():
        return [
            _run(run, within) if why is None else RunSource(run, (), unfinished=why)
            for run, why in read_sweep_index(folder / SWEEP_INDEX)
        ]
    traces = tuple(sorted(p for p in folder.iterdir() if is_trace_file(p) and _inside(p, within)))
    if traces:
        return [RunSource(folder, traces)]
    below: list[RunSource] = []
    for child in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if _inside(child, within):
            below += _folder_runs(child, within)
    if not below and any(folder.glob(STATUS_GLOB)):  # a run that stopped before any trace
        return [RunSource(folder, ())]
    return [world] if (world := _one_world_in_parts(folder, below)) else below


def _one_world_in_parts(folder: Path, below: list[RunSource]) -> RunSource | None:
    """`folder`'s sub-folders as one run where each holds some ranks of one world and nothing
    else is below it: their traces' heads (peek) name one world size and backend, no rank in
    two sub-folders, and no sub-folder the whole world."""
    if len(below) < 2 or any(
        s.folder is None or s.folder.parent != folder or s.stored or s.unfinished or not s.files
        or (s.folder / RUN_RECORD).exists()
        for s in below
    ):  # fmt: skip
        return None
    worlds: set[tuple[int, str | None]] = set()
    taken: set[int] = set()
    for source in below:
        heads = [peek(f) for f in source.files]
        if any(h is None for h in heads):
            return None
        ranks = {h.rank for h in heads if h}
        worlds |= {(h.world_size, h.backend) for h in heads if h}
        if taken & ranks or len(worlds) > 1 or len(ranks) >= next(iter(worlds))[0]:
            return None
        taken |= ranks
    files = tuple(f for s in below for f in s.files)
    return RunSource(folder, files, parts=tuple(s.folder for s in below if s.folder))


def _stored_runs(store: Path, within: Path | None) -> list[RunSource]:
    return [
        _stored_run(store, job, within)
        for job in layout.jobs(layout.open_store(store))
        if _inside(layout.job_dir(store, job), within)
    ]


def _stored_run(store: Path, job: str, within: Path | None) -> RunSource:
    """A job's partitions; one that links out of `within` is not read (the job's record then
    says that rank is missing)."""
    layout.open_store(store)
    places = layout.partitions(store, job)
    packed = [layout.is_packed(p) for p in places]
    # A job has one pack: its folder looked at once for all its ranks.
    pack_inside = any(packed) and _inside(places[packed.index(True)].parent, within)
    partitions = tuple(
        p
        for p, in_pack in zip(places, packed, strict=True)
        if (pack_inside if in_pack else _inside(p, within))
    )
    return RunSource(layout.job_dir(store, job), partitions, stored=True)


def listed_again(source: RunSource, within: Path | None) -> RunSource:
    """A stored job's partitions as they are now (under the store's lock: store/lock.reading),
    any other run as it was listed."""
    if not source.stored or source.folder is None:
        return source
    try:
        return _stored_run(source.folder.parent, source.job, within)
    except OSError:  # the job is gone: its record, gone too, is said missing
        return RunSource(source.folder, (), stored=True)


def _run(folder: Path, within: Path | None) -> RunSource:
    """A sweep's run: its traces, none that links out of `within`."""
    if not folder.is_dir():
        raise TraceviewError(f"{folder}: listed in the sweep index, but not a folder")
    traces = (p for p in folder.iterdir() if is_trace_file(p) and _inside(p, within))
    return RunSource(folder, tuple(sorted(traces)))


class RankIdentity(Protocol):
    """What the one-job check reads of a rank (a RankReport, or what an ingest worker says)."""

    @property
    def trace(self) -> Path: ...
    @property
    def rank(self) -> int | None: ...
    @property
    def world_size(self) -> int | None: ...
    @property
    def backend(self) -> str | None: ...
    @property
    def epoch_span_ns(self) -> tuple[int, int] | None: ...
    @property
    def recorded_strategy(self) -> str | None: ...


def check_one_job(folder: Path, reports: Sequence[RankIdentity]) -> None:
    """A folder is one job: no rank twice, one world size, backend and recorded strategy,
    overlapping wall time."""
    by_rank: dict[int, RankIdentity] = {}
    for r in reports:
        if r.rank is None:
            continue
        if r.rank in by_rank:
            raise TraceviewError(_claimed_twice(folder, r.rank, by_rank[r.rank], r))
        by_rank[r.rank] = r
    for attr, said in (
        ("world_size", "world_size"),
        ("backend", "backend"),
        ("recorded_strategy", "strategy"),
    ):
        seen = {getattr(r, attr): r for r in reports if getattr(r, attr) is not None}
        if len(seen) > 1:
            (a, ra), (b, rb) = list(seen.items())[:2]
            raise TraceviewError(
                f"{folder}: mixes traces of different jobs ({ra.trace.name}: {said} {a}, "
                f"{rb.trace.name}: {said} {b}): move each job's traces into a folder of its own"
            )
    spans = [(r.epoch_span_ns, r) for r in reports if r.epoch_span_ns is not None]
    if spans:
        latest_start = max(spans, key=lambda s: s[0][0])
        earliest_end = min(spans, key=lambda s: s[0][1])
        gap = latest_start[0][0] - earliest_end[0][1]
        if gap > SAME_JOB_SLACK_NS:
            raise TraceviewError(
                f"{folder}: mixes traces of different jobs ({earliest_end[1].trace.name} ends "
                f"{gap / 3.6e12:.1f} h before {latest_start[1].trace.name} starts): move each "
                "job's traces into a folder of its own"
            )


def ran_together(reports: Sequence[RankIdentity]) -> bool:
    """Different known ranks of one world size and backend, profiled at the same time: parts
    of one job's world, wherever their traces lie."""
    ranks = [r.rank for r in reports]
    if None in ranks or len(ranks) != len(set(ranks)):
        return False
    if len({(r.world_size, r.backend) for r in reports}) > 1:
        return False
    spans = [r.epoch_span_ns for r in reports if r.epoch_span_ns is not None]
    return not spans or max(s[0] for s in spans) - min(s[1] for s in spans) <= SAME_JOB_SLACK_NS


def _claimed_twice(folder: Path, rank: int, a: RankIdentity, b: RankIdentity) -> str:
    """Why two traces of one rank in one folder are not its profiling cycles, and what to do."""
    both = f"{folder}: rank {rank} is claimed by both {a.trace.name} and {b.trace.name}"
    if a.epoch_span_ns and b.epoch_span_ns:
        apart = max(a.epoch_span_ns[0], b.epoch_span_ns[0]) - min(
            a.epoch_span_ns[1], b.epoch_span_ns[1]
        )
        if apart < 0:
            return (
                f"{both}, profiled at the same time: traces of two jobs; move each job's "
                "traces into a folder of its own"
            )
    return (
        f"{both}, which repeat the same steps or differ in world size, backend or host: two "
        "runs written into one folder; move each run's traces into a folder of its own (name "
        "both folders to compare them)"
    )


def read_paths(sources: Sequence[RunSource]) -> tuple[list[Path], list[Path]]:
    """What reading `sources` reads: its files (traces, each run's records and rank accounts,
    the index of the sweep a run folder may be part of), and the folders read whole (a
    store's)."""
    files = [f for s in sources if not s.stored for f in s.files]
    for s in sources:
        if s.folder is not None and not s.stored:
            files += [s.folder / name for name in NOT_TRACES]
            files += [s.folder.parent / SWEEP_INDEX, *s.folder.glob(STATUS_GLOB)]
    stores = {s.folder.parent for s in sources if s.stored and s.folder is not None}
    return files, sorted(stores)
