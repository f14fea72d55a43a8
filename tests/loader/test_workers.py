"""Worker processes of a many-trace load run, with every thread they start (polars' among them),
wherever the scheduler puts them: on every core the process that starts them may use
(loader/workers.py; kept each to a core, they took as much CPU or more)."""

from __future__ import annotations

import os

import pytest

from traceview.loader.workers import map_in_processes
from traceview.preload import cores_allowed

CORES = cores_allowed()
pytestmark = pytest.mark.skipif(not CORES, reason="needs Linux's affinity")


def cores_of_each_thread(_: int) -> list[list[int]]:
    """(In a worker.) The cores each of its threads may run on, polars' pool started first."""
    import polars as pl

    pl.DataFrame({"a": [1, 2]}).filter(pl.col("a") > 1)  # polars starts its threads
    threads = os.listdir("/proc/self/task")
    return [sorted(os.sched_getaffinity(int(t))) for t in threads]


def test_each_worker_and_its_threads_may_run_on_every_core():
    seen = map_in_processes(
        cores_of_each_thread, [(i,) for i in range(len(CORES))], jobs=len(CORES)
    )
    assert all(len(threads) > 1 for threads in seen)  # the main thread and polars' own
    assert all(cores == CORES for threads in seen for cores in threads)
    assert cores_allowed() == CORES  # nor is the process that starts them kept
