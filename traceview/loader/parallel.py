"""Analyse many traces, one process per core, and gather what each produced or why it failed.
Small traces go to a worker several at a time, modelled (model/batch.py) and measured
(analysis/stack.py) together: a small rank's model and measures are mostly the fixed cost of
their queries."""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TypeVar

import msgspec

from traceview import preload
from traceview.analysis.rank import RankReport
from traceview.errors import A_BUG, CannotWrite, NotATraceError, TraceviewError
from traceview.inputs import ProgressFn, is_stream
from traceview.loader.rank import measured, read_for_model, without_events
from traceview.loader.workers import map_in_processes
from traceview.model import Timeline, build_timelines
from traceview.parse import Trace
from traceview.parse.stream import MAX_EVENT_BYTES
from traceview.remote import storage_error


class Failure(msgspec.Struct, frozen=True):
    path: Path
    message: str
    not_a_trace: bool = False  # well-formed JSON of another kind
    internal: str | None = None  # a bug, not bad input: its traceback
    # Not read, through no fault of the input: its worker died (killed, out of memory), or its
    # sweep point did not finish. Input lost, as a trace cut short is (exit 1), not bad input.
    lost: bool = False
    cannot_write: str | None = None  # what it wrote could not be (the system's reason)


def not_finished(folder: Path, why: str) -> Failure:
    """What a sweep's point that did not finish gives: said, not read."""
    return Failure(folder, f"{folder}: {why}", lost=True)


def crashed(task: tuple[object, ...], why: str) -> Sequence[Failure]:
    """What a task on traces (its first argument: their paths) whose worker died gives: each
    of them lost."""
    paths = task[0]
    assert isinstance(paths, list)
    return [Failure(p, f"{p}: the process analysing it {why}", lost=True) for p in paths]


Outcome = RankReport | Failure
T = TypeVar("T")
R = TypeVar("R")
DoneFn = Callable[[int, int, Outcome], None]  # (finished so far, total, what finished)


class Options(msgspec.Struct, frozen=True, kw_only=True):
    """What every trace of one load is analysed with (load/rank.py analyze_trace)."""

    comm_pattern: str | None = None
    keep_intervals: bool | int = False  # a number N: for ranks below N only
    max_event_bytes: int = MAX_EVENT_BYTES
    max_memory_bytes: int | None = None  # parse/budget.py; None: the machine's memory
    link_gbps: float | None = None  # the link's peak per direction, given (analysis/links.py)


_DEFAULT_OPTIONS = Options()  # frozen: one for every call that gives none


def reports_together(
    paths: Sequence[Path], options: Options, progress: ProgressFn | None = None
) -> Iterator[Outcome]:
    """Each trace's report, or why it failed, in order: each read on its own, their models
    built and measured together, each exactly as alone (a batch whose models or measures fail
    together is done again one trace at a time: one trace's fault costs no other its report).
    `progress`: of each trace's reading."""
    read: list[Trace | Failure] = [
        guarded(p, partial(read_for_model, p, progress,
                           options.max_event_bytes, options.max_memory_bytes))
        for p in paths
    ]  # fmt: skip
    modelled = _modelled(read, options.comm_pattern)
    del read  # the events let go before the measuring starts
    reports = iter(_reports([m for m in modelled if isinstance(m, tuple)], options.keep_intervals))
    for outcome in modelled:
        yield next(reports) if isinstance(outcome, tuple) else outcome


def _modelled(
    read: list[Trace | Failure], comm_pattern: str | None
) -> list[tuple[Trace, Timeline] | Failure]:
    """Each trace read, its description (without_events) beside its timeline, or why not."""
    timelines = iter(_timelines([t for t in read if isinstance(t, Trace)], comm_pattern))
    modelled: list[tuple[Trace, Timeline] | Failure] = []
    for found in read:
        timeline = next(timelines) if isinstance(found, Trace) else found
        if isinstance(timeline, Failure):
            modelled.append(timeline)
        else:
            assert isinstance(found, Trace)
            modelled.append((without_events(found), timeline))
    return modelled


def _timelines(traces: list[Trace], comm_pattern: str | None) -> list[Timeline | Failure]:
    return together_else_alone(
        traces, lambda t: t.path, partial(build_timelines, comm_pattern=comm_pattern)
    )


def _reports(
    modelled: list[tuple[Trace, Timeline]], keep_intervals: bool | int
) -> list[RankReport | Failure]:
    return together_else_alone(
        modelled, lambda m: m[0].path, partial(measured, keep_intervals=keep_intervals)
    )


def together_else_alone(
    items: list[T], path: Callable[[T], Path], work: Callable[[list[T]], Sequence[R]]
) -> list[R | Failure]:
    """`work` over every item at once; where that fails, over each item alone, so that one
    item's fault costs no other its result (`path`: the trace a failure is said of)."""
    if not items:
        return []
    together = guarded(path(items[0]), partial(work, items))
    if not isinstance(together, Failure):
        return list(together)
    if len(items) == 1:
        return [together]
    alone = (guarded(path(item), partial(work, [item])) for item in items)
    return [one if isinstance(one, Failure) else one[0] for one in alone]


def _analyze_together(paths: list[Path], options: Options) -> list[Outcome]:
    return list(reports_together(paths, options))


# Traces holding less JSON than this go to a worker several at once, at most TOGETHER_AT_MOST
# at a time: a worker then holds a few small traces where it would hold one large one.
TOGETHER_BELOW_BYTES = 8 << 20
TOGETHER_AT_MOST = 16
# A gzip is taken to hold at least this many times its size (its trailer records the size of
# its last member only: a trace written in several members would be taken for less).
GZIP_AT_LEAST = 8
# Enough groups that every worker stays busy to the end: at least this many a worker.
GROUPS_PER_WORKER = 4


def together(paths: Sequence[Path], workers: int) -> list[list[int]]:
    """The paths' indexes in the groups a worker takes at once, in order: each trace alone but
    the small ones, which go in groups of up to TOGETHER_AT_MOST, as many groups as keep every
    worker busy."""
    small = {i for i, p in enumerate(paths) if _json_bytes(p) < TOGETHER_BELOW_BYTES}
    size = min(TOGETHER_AT_MOST, max(1, len(small) // (workers * GROUPS_PER_WORKER)))
    groups: list[list[int]] = []
    filling: list[int] = []
    for i in range(len(paths)):
        if i not in small:
            groups.append([i])
            continue
        if not filling or len(filling) == size:
            filling = []
            groups.append(filling)
        filling.append(i)
    return groups


def _json_bytes(path: Path) -> float:
    """How many bytes of JSON the trace holds, roughly (a stream, or a file that cannot be
    read: as if many, so that it goes alone; its worker says why it cannot be read)."""
    if is_stream(path):
        return float("inf")
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            if f.read(2) != b"\x1f\x8b" or size < 18:
                return size
            f.seek(-4, os.SEEK_END)  # the gzip trailer's uncompressed size (mod 4 GiB)
            return max(int.from_bytes(f.read(4), "little"), size * GZIP_AT_LEAST)
    except OSError:
        return float("inf")


def guarded(path: Path, work: Callable[[], T]) -> T | Failure:
    """`work()` on the trace at `path`, or why it failed: bad input in its one line; a bug as
    a Failure with its traceback, so the other traces are still analysed."""
    try:
        return work()
    except TraceviewError as e:
        unwritable = e.reason if isinstance(e, CannotWrite) else None
        return Failure(path, e.message, isinstance(e, NotATraceError), cannot_write=unwritable)
    except MemoryError:
        return Failure(path, f"{path}: out of memory while analysing")
    except Exception as e:
        if said := storage_error(e, path):
            return Failure(path, said.message)
        return Failure(
            path,
            f"{path}: internal error: {type(e).__name__}: {e} {A_BUG}",
            internal=traceback.format_exc(),
        )


# Below this much trace on disk, in all, starting worker processes (each imports the library,
# ~0.3 s) costs more than reading the traces here takes.
IN_PROCESS_BYTES = 16 << 20


def _small(paths: Sequence[Path], jobs: int | None) -> bool:
    if jobs is not None:  # asked for: as many workers as said
        return False
    try:
        return sum(p.stat().st_size for p in paths) < IN_PROCESS_BYTES
    except OSError:  # said by the worker that reads it, as for any trace
        return False


def analyze_many(
    paths: Sequence[Path],
    *,
    options: Options = _DEFAULT_OPTIONS,
    jobs: int | None = None,
    on_done: DoneFn | None = None,
    progress: ProgressFn | None = None,
) -> list[Outcome]:
    """Outcomes in the order of `paths`. A single trace, traces too small to pay for starting
    workers, or any stream among them (standard input, a pipe: only this process can read it),
    are analysed in this process."""
    here = len(paths) == 1 or jobs == 1 or any(is_stream(p) for p in paths) or _small(paths, jobs)
    workers = 1 if here else max(1, min(len(paths), jobs or preload.cores()))
    groups = together(paths, workers)
    tasks = [([paths[i] for i in g], options) for g in groups]
    each_group = per_trace(on_done, len(paths))
    if here:
        found: list[list[Outcome]] = []
        for names, _ in tasks:
            found.append(list(reports_together(names, options, progress)))
            if each_group:
                each_group(len(found), len(tasks), found[-1])
    else:
        found = map_in_processes(_analyze_together, tasks, jobs, each_group, on_crash=crashed)
    return in_order(groups, found)


def in_order(groups: list[list[int]], found: Sequence[Sequence[T]]) -> list[T]:
    """The outcomes of each group's items, back in the items' order."""
    out: dict[int, T] = {}
    for group, outcomes in zip(groups, found, strict=True):
        out.update(zip(group, outcomes, strict=True))
    return [out[i] for i in range(len(out))]


def per_trace(
    on_done: Callable[[int, int, T], None] | None, total: int
) -> Callable[[int, int, Sequence[T]], None] | None:
    """A group's progress as its traces' (on_done: told of each trace)."""
    if on_done is None:
        return None
    done = [0]

    def group_done(_groups_done: int, _groups: int, outcomes: Sequence[T]) -> None:
        for outcome in outcomes:
            done[0] += 1
            on_done(done[0], total, outcome)

    return group_done
