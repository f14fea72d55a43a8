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

pytestmark = pytest.mark.torchrun


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


def test_force_through_a_link_replaces_the_run_it_points_to(tmp_path):
    run, link = tmp_path / "runs" / "a", tmp_path / "latest"
    first = torchrun(run)
    first.communicate(timeout=300)
    assert first.returncode == 0
    link.symlink_to(run)
    again = torchrun(link, "--force", "--seed", "1")
    log, _ = again.communicate(timeout=300)
    assert again.returncode == 0, log
    assert link.is_symlink() and link.resolve() == run.resolve()
    assert json.loads((run / "run.json").read_text())["config"]["seed"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "runs"]  # nothing left over
    assert sorted(p.name for p in run.parent.iterdir()) == ["a"]


def _mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small file system here (needs root): {done.stderr.strip()}")


def test_a_full_disk_is_said_by_each_rank_not_taken_for_a_kill(tmp_path):
    disk = tmp_path / "disk"
    _mount_tmpfs(disk, "64k")  # room for the accounts, not for a trace
    try:
        out = disk / "run"
        job = torchrun(out)
        log, _ = job.communicate(timeout=300)
        assert job.returncode != 0, log
        left = sorted(p.name for p in out.iterdir())
        result = traceview("analyze", out)
    finally:
        subprocess.run(["umount", str(disk)], check=True)
    assert left == ["rank0.status.json", "rank1.status.json"]  # no partial trace kept
    assert result.code == 2 and result.err.count("\n") == 1
    assert "rank 0 failed after" in result.err and "No space left on device" in result.err
    assert "went silent" not in result.err


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
    # compare reads the run that finished and says which point did not.
    compared = traceview("compare", out, "--format", "json")
    assert compared.code == 1
    assert "zero1-dp1: the sweep's point interrupted: not analysed" in compared.err
    doc = json.loads(compared.out)
    assert [r["strategy"] for r in doc["runs"]] == ["ddp"]
    (error,) = doc["errors"]
    assert error["lost"] and "interrupted" in error["message"]
