"""Analyse many traces, one process per core, and gather what each produced or why it failed."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import msgspec

from traceview.analysis.rank import RankReport
from traceview.errors import A_BUG, CannotWrite, NotATraceError, TraceviewError
from traceview.inputs import ProgressFn, is_stream
from traceview.loader.rank import analyze_trace
from traceview.loader.workers import map_in_processes
from traceview.parse.stream import MAX_EVENT_BYTES


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


def crashed(task: tuple[object, ...], why: str) -> Failure:
    """What a task on a trace (its first argument) whose worker died gives."""
    path = task[0]
    assert isinstance(path, Path)
    return Failure(path, f"{path}: the process analysing it {why}", lost=True)


Outcome = RankReport | Failure
T = TypeVar("T")
DoneFn = Callable[[int, int, Outcome], None]  # (finished so far, total, what finished)


class Options(msgspec.Struct, frozen=True, kw_only=True):
    """What every trace of one load is analysed with (load/rank.py analyze_trace)."""

    comm_pattern: str | None = None
    keep_intervals: bool | int = False  # a number N: for ranks below N only
    max_event_bytes: int = MAX_EVENT_BYTES
    max_memory_bytes: int | None = None  # parse/budget.py; None: the machine's memory
    link_gbps: float | None = None  # the link's peak per direction, given (analysis/links.py)


_DEFAULT_OPTIONS = Options()  # frozen: one for every call that gives none


def _analyze_one(path: Path, options: Options, progress: ProgressFn | None = None) -> Outcome:
    return guarded(
        path,
        lambda: analyze_trace(
            path,
            comm_pattern=options.comm_pattern,
            progress=progress,
            keep_intervals=options.keep_intervals,
            max_event_bytes=options.max_event_bytes,
            max_memory_bytes=options.max_memory_bytes,
        ),
    )


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
    if len(paths) == 1 or jobs == 1 or any(is_stream(p) for p in paths) or _small(paths, jobs):
        outcomes: list[Outcome] = []
        for i, path in enumerate(paths):
            outcomes.append(_analyze_one(path, options, progress))
            if on_done:
                on_done(i + 1, len(paths), outcomes[-1])
        return outcomes
    return map_in_processes(
        _analyze_one, [(p, options) for p in paths], jobs, on_done, on_crash=crashed
    )
