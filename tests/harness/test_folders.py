"""Nothing lost: real torchrun jobs killed, interrupted or replaced, and what they leave."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.run_cli import traceview
from tests.harness.conftest import SMALL

pytestmark = pytest.mark.slow


def torchrun(out: Path, *extra: str, nproc: int = 2) -> subprocess.Popen[str]:
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone",
        f"--nproc_per_node={nproc}", "-m", "instrumented_train", "--device", "cpu",
        "--out", str(out), *SMALL, *extra,
    ]  # fmt: skip
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for(condition, seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def status(folder: Path, rank: int) -> dict:
    try:
        return json.loads((folder / f"rank{rank}.status.json").read_text())
    except (OSError, ValueError):
        return {}


def kill_rank_mid_run(folder_written: Path, job: subprocess.Popen[str]) -> None:
    """Once rank 1 has done a step, SIGKILL it; torchrun then stops rank 0."""
    wait_for(lambda: status(folder_written, 1).get("steps_done", 0) >= 1)
    os.kill(status(folder_written, 1)["pid"], signal.SIGKILL)
    job.communicate(timeout=300)
    assert job.returncode != 0


def test_a_killed_rank_leaves_the_run_marked_incomplete(tmp_path):
    out = tmp_path / "run"
    kill_rank_mid_run(out, torchrun(out, "--baseline-steps", "400"))
    assert not (out / "run.json").exists()
    # Rank 0 either hears Gloo's connection close first, or torchrun's SIGTERM: both said.
    survivor = status(out, 0)
    assert (survivor["state"], "SIGTERM" in survivor["reason"]) in {
        ("stopped", True),
        ("failed", False),
    }
    assert survivor["state"] == "stopped" or "remote worker" in survivor["reason"]
    assert status(out, 1)["state"] == "running"  # killed: no word after its last step
    result = traceview("analyze", out)
    assert result.code == 2 and result.err.count("\n") == 1
    assert f"incomplete run (no run.json): rank 0 {survivor['state']} after" in result.err
    assert "rank 1 went silent after" in result.err and "(killed?)" in result.err


def test_force_keeps_the_previous_run_until_the_new_one_succeeds(tmp_path):
    out = tmp_path / "run"
    first = torchrun(out)
    first.communicate(timeout=300)
    assert first.returncode == 0
    record = (out / "run.json").read_text()
    traces = sorted(p.name for p in out.iterdir())
    assert traces == ["rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz", "run.json"]
    incoming = tmp_path / "run.incoming"
    kill_rank_mid_run(incoming, torchrun(out, "--force", "--baseline-steps", "400"))
    assert (out / "run.json").read_text() == record  # the previous run, untouched
    assert sorted(p.name for p in out.iterdir()) == traces
    assert status(incoming, 1)["state"] == "running"
    # A later --force that succeeds replaces it, and clears the failed attempt.
    again = torchrun(out, "--force", "--seed", "1")
    again.communicate(timeout=300)
    assert again.returncode == 0 and not incoming.exists()
    assert json.loads((out / "run.json").read_text())["config"]["seed"] == 1
    assert sorted(p.name for p in out.iterdir()) == traces  # no status files left
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_an_interrupted_sweep_keeps_a_valid_index(tmp_path):
    out = tmp_path / "sweep"
    cmd = [
        sys.executable, "-m", "instrumented_train.sweep", "--strategies", "ddp,zero1",
        "--dp", "1", "--device", "cpu", "--out", str(out), "--", *SMALL,
        "--baseline-steps", "150",
    ]  # fmt: skip
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)  # fmt: skip
    # The first point done, the second under way (on a busy machine, minutes).
    wait_for(lambda: status(out / "zero1-dp1", 0).get("steps_done", 0) >= 1)
    os.killpg(job.pid, signal.SIGINT)  # Ctrl-C: the sweep and its torchrun both get it
    _, err = job.communicate(timeout=300)
    assert job.returncode == 130
    assert "sweep: interrupted: 1 of 2 runs done" in err
    index = json.loads((out / "index.json").read_text())
    assert [(r["strategy"], r["status"]) for r in index["runs"]] == [
        ("ddp", "ok"),
        ("zero1", "interrupted"),
    ]
    assert (out / "ddp-dp1" / "run.json").exists()
    # The interrupted run said why it stopped.
    assert status(out / "zero1-dp1", 0)["state"] == "stopped"
