"""The `traceview` program leaves without tearing the interpreter down: its exit code is
main's, its output is whole, and exit handlers still run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parents[1] / "fixtures/traces/nccl_ddp_w2_rank0_step5.json.gz"

_WITH_A_HANDLER = """
import atexit, sys
atexit.register(lambda: print("handler ran", file=sys.stderr))
from traceview.cli import program
sys.argv = ["traceview", *sys.argv[1:]]
program()
"""


def _program(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITH_A_HANDLER, *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.cli
def test_the_output_is_whole_and_exit_handlers_run():
    done = _program("analyze", str(FIXTURE), "--format", "json", "--no-progress")
    assert done.returncode == 0
    assert json.loads(done.stdout)["ranks"][0]["rank"] == 0  # a pipe: flushed before leaving
    assert done.stderr.splitlines() == ["handler ran"]


@pytest.mark.cli
def test_the_exit_code_is_mains():
    done = _program("analyze", "/no/such/trace.json")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines()[-1] == "handler ran"
    assert "no such file" in done.stderr
