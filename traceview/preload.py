"""Settings for the native libraries traceview loads, made before they load (the package imports
this first); a setting of the user's own, in the same variable, is left as it is.

- polars' allocator (jemalloc): one arena and no per-thread caches. Parsing (two threads) and
  the model allocate and free large tables in quick succession; with an arena per thread, what
  one thread freed is not reused by the next, and a 1 GB trace peaks about 10 % higher
  (benchmarks/bench_analyze.py). Handing freed pages back sooner (the decay settings) lowers the
  peak little more and costs system time in page faults.
- numpy's OpenBLAS: one thread. traceview's arrays are small fits and interval sets; a pool of
  BLAS threads only costs start-up time, and its idle threads spin.
"""

from __future__ import annotations

import os

JEMALLOC_ENV = "_RJEM_MALLOC_CONF"  # polars' jemalloc is built with the "_rjem_" prefix
JEMALLOC_CONF = "narenas:1,tcache:false"
BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"

os.environ.setdefault(JEMALLOC_ENV, JEMALLOC_CONF)
os.environ.setdefault(BLAS_THREADS_ENV, "1")
