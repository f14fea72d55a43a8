"""Analyse many traces, one process per core, and gather what each produced or why it failed."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from traceview.analysis.report import RankReport, analyze_trace
from traceview.errors import NotATraceError, TraceviewError
from traceview.parse.source import ProgressFn


@dataclass(frozen=True)
class Failure:
    path: Path
    message: str
    not_a_trace: bool = False  # well-formed JSON of another kind


Outcome = RankReport | Failure
DoneFn = Callable[[int, int, Outcome], None]  # (finished so far, total, what finished)


def _analyze_one(
    path: Path, comm_pattern: str | None, keep_intervals: bool, progress: ProgressFn | None = None
) -> Outcome:
    try:
        return analyze_trace(
            path, comm_pattern=comm_pattern, progress=progress, keep_intervals=keep_intervals
        )
    except TraceviewError as e:
        return Failure(path, e.message, isinstance(e, NotATraceError))
    except MemoryError:
        return Failure(path, f"{path}: out of memory while analysing")


def analyze_many(
    paths: Sequence[Path],
    *,
    comm_pattern: str | None = None,
    keep_intervals: bool = False,
    jobs: int | None = None,
    on_done: DoneFn | None = None,
    progress: ProgressFn | None = None,
) -> list[Outcome]:
    """Outcomes in the order of `paths`. A single trace is analysed in this process."""
    workers = max(1, min(len(paths), jobs or os.cpu_count() or 1))
    if workers == 1:
        outcomes: list[Outcome] = []
        for i, path in enumerate(paths):
            outcomes.append(_analyze_one(path, comm_pattern, keep_intervals, progress))
            if on_done:
                on_done(i + 1, len(paths), outcomes[-1])
        return outcomes
    results: dict[int, Outcome] = {}
    # spawn, not fork: polars' thread pools do not survive a fork.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {
            pool.submit(_analyze_one, p, comm_pattern, keep_intervals): i
            for i, p in enumerate(paths)
        }
        for done, future in enumerate(as_completed(futures), start=1):
            i = futures[future]
            results[i] = future.result()
            if on_done:
                on_done(done, len(paths), results[i])
    return [results[i] for i in range(len(paths))]
