"""Analyse many traces, one process per core, and gather what each produced or why it failed."""

from __future__ import annotations

import multiprocessing
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from traceview import preload
from traceview.analysis.rank import RankReport
from traceview.errors import A_BUG, NotATraceError, TraceviewError
from traceview.loader.rank import analyze_trace
from traceview.parse.source import ProgressFn, is_stream
from traceview.parse.stream import MAX_EVENT_BYTES


@dataclass(frozen=True)
class Failure:
    path: Path
    message: str
    not_a_trace: bool = False  # well-formed JSON of another kind
    internal: str | None = None  # a bug, not bad input: its traceback


Outcome = RankReport | Failure
T = TypeVar("T")
R = TypeVar("R")
DoneFn = Callable[[int, int, Outcome], None]  # (finished so far, total, what finished)


@dataclass(frozen=True, kw_only=True)
class Options:
    """What every trace of one load is analysed with (load/rank.py analyze_trace)."""

    comm_pattern: str | None = None
    keep_intervals: bool | int = False  # a number N: for ranks below N only
    max_event_bytes: int = MAX_EVENT_BYTES


def _analyze_one(path: Path, options: Options, progress: ProgressFn | None = None) -> Outcome:
    return guarded(
        path,
        lambda: analyze_trace(
            path,
            comm_pattern=options.comm_pattern,
            progress=progress,
            keep_intervals=options.keep_intervals,
            max_event_bytes=options.max_event_bytes,
        ),
    )


def guarded(path: Path, work: Callable[[], T]) -> T | Failure:
    """`work()` on the trace at `path`, or why it failed: bad input in its one line; a bug as
    a Failure with its traceback, so the other traces are still analysed."""
    try:
        return work()
    except TraceviewError as e:
        return Failure(path, e.message, isinstance(e, NotATraceError))
    except MemoryError:
        return Failure(path, f"{path}: out of memory while analysing")
    except Exception as e:
        return Failure(
            path,
            f"{path}: internal error: {type(e).__name__}: {e} {A_BUG}",
            internal=traceback.format_exc(),
        )


def analyze_many(
    paths: Sequence[Path],
    *,
    options: Options = Options(),
    jobs: int | None = None,
    on_done: DoneFn | None = None,
    progress: ProgressFn | None = None,
) -> list[Outcome]:
    """Outcomes in the order of `paths`. A single trace, or any stream among them (standard
    input, a pipe: only this process can read it), is analysed in this process."""
    if len(paths) == 1 or jobs == 1 or any(is_stream(p) for p in paths):
        outcomes: list[Outcome] = []
        for i, path in enumerate(paths):
            outcomes.append(_analyze_one(path, options, progress))
            if on_done:
                on_done(i + 1, len(paths), outcomes[-1])
        return outcomes
    return map_in_processes(_analyze_one, [(p, options) for p in paths], jobs, on_done)


def map_in_processes(
    fn: Callable[..., R],
    tasks: Sequence[tuple[object, ...]],
    jobs: int | None = None,
    on_done: Callable[[int, int, R], None] | None = None,
) -> list[R]:
    """`fn(*task)` for each task, one process per core (or `jobs`); results in task order.
    `fn` must be a module-level function (it is sent to the workers by name)."""
    workers = max(1, min(len(tasks), jobs or preload.cores()))
    if workers == 1:
        results_in_order: list[R] = []
        for i, task in enumerate(tasks):
            results_in_order.append(fn(*task))
            if on_done:
                on_done(i + 1, len(tasks), results_in_order[-1])
        return results_in_order
    results: dict[int, R] = {}
    # spawn, not fork: polars' thread pools do not survive a fork.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        # The workers start as the tasks are submitted.
        with _workers_skip_main(), preload.for_workers():
            futures = {pool.submit(fn, *task): i for i, task in enumerate(tasks)}
        for done, future in enumerate(as_completed(futures), start=1):
            i = futures[future]
            results[i] = future.result()
            if on_done:
                on_done(done, len(tasks), results[i])
    return [results[i] for i in range(len(tasks))]


@contextmanager
def _workers_skip_main() -> Iterator[None]:
    """Spawned workers import the main module again, unless it hides where it came from. They
    need only traceview; and a user's script without an `if __name__ == "__main__":` guard would
    otherwise run again in each of them (and fail there, starting workers of its own)."""
    main = sys.modules.get("__main__")
    saved: dict[str, object] = {
        k: main.__dict__[k] for k in ("__file__", "__spec__") if main and k in main.__dict__
    }
    if main is None or not saved:
        yield
        return
    main.__dict__.pop("__file__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__dict__.update(saved)
