"""Settings for the native libraries traceview loads, made by the `traceview` program before they
load (traceview/cli/__init__.py calls `for_the_program` first) and inherited by its worker
processes; a setting of the user's own, in the same variable, is left as it is; and Python's
cycle collector in traceview's own processes. Importing traceview as a library (a training
process, a notebook) changes nothing.

- polars' allocator (jemalloc): one arena and no per-thread caches. Parsing (two threads) and
  the model allocate and free large tables in quick succession; with an arena per thread, what
  one thread freed is not reused by the next, and a 1 GB trace peaks about 10 % higher
  (benchmarks/bench_analyze.py). polars builds it with a background thread that hands freed
  pages back after 0.5 s (dirty) and 1 s (muzzy); handing them back at once (dirty_decay_ms:0)
  lowers a 1 GB trace's peak by a fifth (0.50-0.53x the file -> 0.39x) but costs about a quarter
  more CPU and a fifth more wall time, system time in page faults (benchmarks/bench_analyze.py
  --sizes 1000, run with and without the setting): not taken.
- polars' thread pool: one thread in each worker process of a many-trace load (one process per
  core already uses every core; a pool per process as wide as the machine only adds threads
  that compete): four 58 MB ranks on 2 cores took 8 % less CPU and 8 % less wall time. A single
  trace keeps polars' own pool: on 2 cores a pool of one thread cost less CPU in some runs and
  more wall time in others (its two reading threads then wait on one pool thread).
- numpy's OpenBLAS: one thread. traceview's arrays are small fits and interval sets; a pool of
  BLAS threads only costs start-up time, and its idle threads spin.
- Python's cycle collector (`collect_less`, once the modules are loaded): what is loaded so far
  left out of every later round, and a round of the young objects every COLLECT_EVERY
  allocations, not 700. A job's reports are hundreds of thousands of small objects that live to
  the end and hold no garbage cycles: at 10,240 ranks, each whole round walked all of them again.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager

JEMALLOC_ENV = "_RJEM_MALLOC_CONF"  # polars' jemalloc is built with the "_rjem_" prefix
JEMALLOC_CONF = "narenas:1,tcache:false"
POLARS_THREADS_ENV = "POLARS_MAX_THREADS"
BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"
COLLECT_EVERY = 50_000  # allocations between rounds of the cycle collector's young generation


def cores_allowed() -> list[int]:
    """The cores this process may run on, where the platform says (else none)."""
    if not hasattr(os, "sched_getaffinity"):
        return []
    return sorted(os.sched_getaffinity(0))


def cores() -> int:
    """How many cores this process may run on."""
    return len(cores_allowed()) or os.cpu_count() or 1


def for_the_program() -> None:
    """polars' allocator and numpy's BLAS threads, for this process and those it starts. Effective
    only before polars and numpy load."""
    os.environ.setdefault(JEMALLOC_ENV, JEMALLOC_CONF)
    os.environ.setdefault(BLAS_THREADS_ENV, "1")


def collect_less() -> None:
    """The cycle collector for a process of traceview's own (the program, the dashboard's
    server), once its modules are loaded: they are left out of every later round, and rounds
    come every COLLECT_EVERY allocations."""
    gc.freeze()
    gc.set_threshold(COLLECT_EVERY, *gc.get_threshold()[1:])


@contextmanager
def for_workers() -> Iterator[None]:
    """The settings worker processes started inside inherit: a polars pool of one thread each
    (unless the user set its size)."""
    if POLARS_THREADS_ENV in os.environ:
        yield
        return
    os.environ[POLARS_THREADS_ENV] = "1"
    try:
        yield
    finally:
        os.environ.pop(POLARS_THREADS_ENV, None)
