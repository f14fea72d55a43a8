"""Settings for the whole suite: hypothesis draws the same examples on every CI run (a failure
there is reproducible); locally it explores. scripts/fuzz.py and scripts/sanitize.sh fuzz longer.

`pytest` alone runs the unit tests; the groups that start processes (markers in pyproject.toml)
run under scripts/test.sh. A test in none of them that starts a process fails, saying to mark
it: the default run stays the fast one."""

from __future__ import annotations

import os
import subprocess

import pytest
from hypothesis import settings

from tests.s3_endpoint import s3  # noqa: F401 (a fixture: an S3 endpoint on 127.0.0.1)

GROUPS = ("cli", "torchrun", "ray", "browser", "dashboard", "slow")

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore")
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "explore")
)


@pytest.fixture(autouse=True)
def _processes_only_in_their_groups(request, monkeypatch):
    if any(request.node.get_closest_marker(group) for group in GROUPS):
        return

    def refused(*args, **kwargs):
        raise AssertionError(
            f"{request.node.nodeid} starts a process: mark it with its group ({', '.join(GROUPS)}: "
            "pyproject.toml), which scripts/test.sh runs"
        )

    monkeypatch.setattr(subprocess.Popen, "__init__", refused)
