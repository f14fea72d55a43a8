"""Real sweeps of the harness: torchrun processes on CPU with Gloo, at world size 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

SMALL = [
    "--seq-len",
    "32",
    "--micro-batch",
    "2",
    "--baseline-steps",
    "2",
    "--wait",
    "0",
    "--warmup",
    "1",
    "--active",
    "2",
]
ACTIVE_STEPS = 2


def sweep(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "instrumented_train.sweep", "--out", str(out), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


class Run:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.record: dict[str, Any] = json.loads((folder / "run.json").read_text())
        self.psi: int = self.record["num_params"]

    def trace(self, rank: int) -> Path:
        return self.folder / self.record["ranks"][rank]["trace"]


def sweep_runs(out: Path, strategies: str, *extra: str) -> dict[str, Run]:
    """Sweep `strategies` at DP 2 on CPU with small steps; the runs by strategy."""
    done = sweep(out, "--strategies", strategies, "--dp", "2", "--device", "cpu",
                 "--bucket-cap-mb", "1", "--", *SMALL, *extra)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    # It starts by saying how busy the cores it may use are.
    assert done.stdout.startswith(f"sweep: {len(os.sched_getaffinity(0))} core"), done.stdout
    assert "other processes keep " in done.stdout.splitlines()[0]
    index = json.loads((out / "index.json").read_text())
    return {r["strategy"]: Run(out / r["path"]) for r in index["runs"]}


@pytest.fixture(scope="session")
def strategies_w2(tmp_path_factory) -> dict[str, Run]:
    return sweep_runs(tmp_path_factory.mktemp("sweep") / "w2", "ddp,zero1,zero2,zero3")


@pytest.fixture(scope="session")
def accumulating_w2(tmp_path_factory) -> dict[str, Run]:
    return sweep_runs(tmp_path_factory.mktemp("sweep") / "accum", "ddp,zero2", "--grad-accum", "2")
