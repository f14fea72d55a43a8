"""Settings for the native libraries traceview loads, made before they load (the package imports
this first); a setting of the user's own, in the same variable, is left as it is.

- polars' allocator (jemalloc): one arena and no per-thread caches. Parsing (two threads) and
  the model allocate and free large tables in quick succession; with an arena per thread, what
  one thread freed is not reused by the next, and a 1 GB trace peaks about 10 % higher
  (benchmarks/bench_analyze.py). Handing freed pages back sooner (the decay settings) lowers the
  peak little more and costs system time in page faults.
- polars' thread pool: one thread fewer than the cores, and one thread in each worker process
  of a many-trace load (one process per core already uses them all). A large trace is read by
  two threads of traceview's own (parse/halves.py) that call polars for each group of rows;
  with a pool thread for every core besides, the pool's workers, woken for each of those small
  calls, take the cores the reading threads need. On 2 cores a pool of one thread used 7-10 %
  less CPU at the same wall time (one 58 MB, 263 MB and 1 GB trace; four 58 MB ranks).
- numpy's OpenBLAS: one thread. traceview's arrays are small fits and interval sets; a pool of
  BLAS threads only costs start-up time, and its idle threads spin.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

JEMALLOC_ENV = "_RJEM_MALLOC_CONF"  # polars' jemalloc is built with the "_rjem_" prefix
JEMALLOC_CONF = "narenas:1,tcache:false"
POLARS_THREADS_ENV = "POLARS_MAX_THREADS"
BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"


def cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


_USERS_POLARS_THREADS = os.environ.get(POLARS_THREADS_ENV)
os.environ.setdefault(JEMALLOC_ENV, JEMALLOC_CONF)
os.environ.setdefault(POLARS_THREADS_ENV, str(max(1, cores() - 1)))
os.environ.setdefault(BLAS_THREADS_ENV, "1")


@contextmanager
def for_workers() -> Iterator[None]:
    """The settings worker processes started inside inherit: a polars pool of one thread each."""
    if _USERS_POLARS_THREADS is not None:
        yield
        return
    ours = os.environ.get(POLARS_THREADS_ENV)
    os.environ[POLARS_THREADS_ENV] = "1"
    try:
        yield
    finally:
        if ours is None:
            os.environ.pop(POLARS_THREADS_ENV, None)
        else:
            os.environ[POLARS_THREADS_ENV] = ours
