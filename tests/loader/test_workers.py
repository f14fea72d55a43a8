"""Worker processes of a many-trace load keep each to a core of its own, with every thread they
run (polars' among them), where there are no more workers than cores; more workers than cores
are left where the scheduler puts them (loader/workers.py)."""

from __future__ import annotations

import os

import pytest

from traceview.loader.workers import cores_allowed, map_in_processes

CORES = cores_allowed()
pytestmark = pytest.mark.skipif(len(CORES) < 2, reason="needs two cores and Linux's affinity")


def cores_of_each_thread(_: int) -> list[list[int]]:
    """(In a worker.) The cores each of its threads may run on, polars' pool started first."""
    import polars as pl

    pl.DataFrame({"a": [1, 2]}).filter(pl.col("a") > 1)  # polars starts its threads
    threads = os.listdir("/proc/self/task")
    return [sorted(os.sched_getaffinity(int(t))) for t in threads]


def test_each_worker_keeps_to_a_core_of_its_own_with_all_its_threads():
    first, second = map_in_processes(cores_of_each_thread, [(0,), (1,)], jobs=2)
    assert len(first) > 1 and len(second) > 1  # the main thread and polars' own
    assert all(cores == first[0] for cores in first) and len(first[0]) == 1
    assert all(cores == second[0] for cores in second) and len(second[0]) == 1
    assert first[0] != second[0]
    assert {*first[0], *second[0]} <= set(CORES)


def test_more_workers_than_cores_run_where_the_scheduler_puts_them():
    workers = len(CORES) + 1
    seen = map_in_processes(cores_of_each_thread, [(i,) for i in range(workers)], jobs=workers)
    assert all(cores == CORES for threads in seen for cores in threads)


def test_the_process_that_starts_them_is_not_kept():
    map_in_processes(cores_of_each_thread, [(0,), (1,)], jobs=2)
    assert cores_allowed() == CORES
