"""traceview sets up polars' allocator and numpy's BLAS threads before either library loads,
and leaves a user's own settings."""

from __future__ import annotations

import os
import subprocess
import sys

from traceview.preload import BLAS_THREADS_ENV, JEMALLOC_CONF, JEMALLOC_ENV

# Prints each setting as it stands when its library is first imported, however traceview gets
# there.
_AT_IMPORT = f"""
import os, sys
class Spy:
    def find_spec(self, name, path=None, target=None):
        if name == "polars":
            print("polars", os.environ.get({JEMALLOC_ENV!r}))
        if name == "numpy":
            print("numpy", os.environ.get({BLAS_THREADS_ENV!r}))
        return None
sys.meta_path.insert(0, Spy())
import traceview
"""


def _settings_at_import(env: dict[str, str]) -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, "-c", _AT_IMPORT], env=env, capture_output=True, text=True, check=True
    )
    return dict(line.split(" ", 1) for line in out.stdout.splitlines())


def test_the_settings_are_made_before_the_libraries_load():
    env = {k: v for k, v in os.environ.items() if k not in (JEMALLOC_ENV, BLAS_THREADS_ENV)}
    assert _settings_at_import(env) == {"polars": JEMALLOC_CONF, "numpy": "1"}


def test_settings_of_the_users_own_are_kept():
    env = {**os.environ, JEMALLOC_ENV: "narenas:4", BLAS_THREADS_ENV: "8"}
    assert _settings_at_import(env) == {"polars": "narenas:4", "numpy": "8"}
