"""Worker processes of a many-trace load keep each to a core of its own, with every thread they
run (polars' among them), where there are as many workers as cores; more workers than cores
are left where the scheduler puts them (loader/workers.py)."""

from __future__ import annotations

import os

import pytest

from traceview.loader.workers import _Pool, map_in_processes
from traceview.preload import cores_allowed

CORES = cores_allowed()
pytestmark = pytest.mark.skipif(
    not 2 <= len(CORES) <= 16, reason="needs 2 to 16 cores (a worker each) and Linux's affinity"
)


def cores_of_each_thread(_: int) -> list[list[int]]:
    """(In a worker.) The cores each of its threads may run on, polars' pool started first."""
    import polars as pl

    pl.DataFrame({"a": [1, 2]}).filter(pl.col("a") > 1)  # polars starts its threads
    threads = os.listdir("/proc/self/task")
    return [sorted(os.sched_getaffinity(int(t))) for t in threads]


def test_each_worker_keeps_to_a_core_of_its_own_with_all_its_threads():
    tasks = [(i,) for i in range(len(CORES))]  # one each: every worker takes one first
    seen = map_in_processes(cores_of_each_thread, tasks, jobs=len(CORES))
    kept = []
    for threads in seen:
        assert len(threads) > 1  # the main thread and polars' own
        assert all(cores == threads[0] for cores in threads) and len(threads[0]) == 1
        kept += threads[0]
    assert sorted(kept) == CORES  # each its own


def test_more_workers_than_cores_run_where_the_scheduler_puts_them():
    workers = len(CORES) + 1
    seen = map_in_processes(cores_of_each_thread, [(i,) for i in range(workers)], jobs=workers)
    assert all(cores == CORES for threads in seen for cores in threads)


def test_a_pool_narrower_than_the_machine_keeps_no_worker_to_a_core():
    # Kept to the first cores, it would share them with another narrow pool's workers while
    # the other cores stay idle. (With fewer tasks than cores the pool is this narrow.)
    with _Pool(os.getpid, len(CORES) - 1) as narrow, _Pool(os.getpid, len(CORES)) as wide:
        assert narrow._cores == [] and wide._cores == CORES


def test_the_process_that_starts_them_is_not_kept():
    map_in_processes(cores_of_each_thread, [(i,) for i in range(len(CORES))], jobs=len(CORES))
    assert cores_allowed() == CORES
