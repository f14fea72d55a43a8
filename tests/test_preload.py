"""The traceview program sets up polars' allocator and numpy's BLAS threads before either library
loads, gives the worker processes of a many-trace load a polars pool of one thread, and leaves a
user's own settings; traceview imported as a library changes no setting at all. The program
pauses Python's cycle collector while it loads its modules, and runs it less often after."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from traceview.preload import (
    BLAS_THREADS_ENV,
    COLLECT_EVERY,
    JEMALLOC_CONF,
    JEMALLOC_ENV,
    POLARS_THREADS_ENV,
)

# Prints each setting as it stands when its library is first imported, however the program gets
# there.
_AT_IMPORT = f"""
import os, sys
class Spy:
    def find_spec(self, name, path=None, target=None):
        if name == "polars":
            print("polars", os.environ.get({JEMALLOC_ENV!r}))
            print("polars_threads", os.environ.get({POLARS_THREADS_ENV!r}))
        if name == "numpy":
            print("numpy", os.environ.get({BLAS_THREADS_ENV!r}))
        return None
sys.meta_path.insert(0, Spy())
import traceview.cli
"""

# The environment after traceview is imported and used as a library, as a training process or a
# notebook would, beside what polars and numpy themselves do to it when they load.
_AS_A_LIBRARY = """
import json, os, sys
before = dict(os.environ)
if sys.argv[1] == "traceview":
    import traceview, traceview.profiler
    traceview.load, traceview.ingest, traceview.load_runs
else:
    import numpy, polars
print(json.dumps({k: os.environ.get(k) for k in set(before) | set(os.environ)
                  if before.get(k) != os.environ.get(k)}))
"""

# What a worker process started by a many-trace load sees, and the setting after the load.
_IN_WORKERS = f"""
import os
from traceview.loader.parallel import map_in_processes
if __name__ == "__main__":
    seen = map_in_processes(os.getenv, [({POLARS_THREADS_ENV!r},)] * 2, jobs=2)
    print("workers", *sorted(set(seen)))
    print("after", os.environ.get({POLARS_THREADS_ENV!r}))
"""

_OURS = (JEMALLOC_ENV, POLARS_THREADS_ENV, BLAS_THREADS_ENV)


def _env(**settings: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in _OURS}, **settings}


def _run(script: str, env: dict[str, str]) -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    return dict(line.split(" ", 1) for line in out.stdout.splitlines())


@pytest.mark.cli
def test_the_settings_are_made_before_the_libraries_load():
    assert _run(_AT_IMPORT, _env()) == {
        "polars": JEMALLOC_CONF,
        "polars_threads": "None",  # polars' own pool
        "numpy": "1",
    }


@pytest.mark.cli
def test_settings_of_the_users_own_are_kept():
    env = _env(**{JEMALLOC_ENV: "narenas:4", POLARS_THREADS_ENV: "3", BLAS_THREADS_ENV: "8"})
    assert _run(_AT_IMPORT, env) == {"polars": "narenas:4", "polars_threads": "3", "numpy": "8"}


@pytest.mark.cli
def test_worker_processes_get_a_pool_of_one_thread_and_the_setting_comes_back():
    assert _run(_IN_WORKERS, _env()) == {"workers": "1", "after": "None"}


@pytest.mark.cli
def test_a_users_own_pool_size_reaches_the_workers_too():
    assert _run(_IN_WORKERS, _env(**{POLARS_THREADS_ENV: "3"})) == {"workers": "3", "after": "3"}


@pytest.mark.cli
def test_traceview_as_a_library_changes_no_setting_its_libraries_do_not():
    def changed(what: str) -> str:
        run = [sys.executable, "-c", _AS_A_LIBRARY, what]
        return subprocess.run(run, env=_env(), capture_output=True, text=True, check=True).stdout

    assert changed("traceview") == changed("libraries")


# The collector's state once the program's modules are loaded: its rounds of the youngest
# generation while they loaded (about a hundred, unpaused), the objects left out of later
# rounds, and whether it runs.
_COLLECTOR = """
import gc
import traceview.cli
print("rounds", gc.get_stats()[0]["collections"])
print("frozen", gc.get_freeze_count())
print("enabled", gc.isenabled())
print("every", gc.get_threshold()[0])
"""


@pytest.mark.cli
def test_the_collector_is_paused_while_the_program_loads_and_runs_after():
    seen = _run(_COLLECTOR, _env())
    assert int(seen["rounds"]) < 40  # those before the pause: Python's own start-up
    assert int(seen["frozen"]) > 10_000  # polars' and the commands' objects
    assert seen["enabled"] == "True"
    assert int(seen["every"]) == COLLECT_EVERY  # a round each 50,000 allocations, not 700


@pytest.mark.cli
def test_traceview_as_a_library_leaves_the_collector_as_it_is():
    def threshold(imports: str) -> str:
        run = [sys.executable, "-c", f"import gc{imports}; print(gc.get_threshold())"]
        return subprocess.run(run, env=_env(), capture_output=True, text=True, check=True).stdout

    assert threshold(", traceview, traceview.loader") == threshold("")
