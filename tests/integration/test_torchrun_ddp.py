"""A real two-rank Gloo DDP job under torchrun, its real profiler traces, and `traceview analyze`."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.run_cli import traceview

pytest.importorskip("torch")
JOB = Path(__file__).with_name("ddp_job.py")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp_run")
    # --standalone: a rendezvous on a free local port, so parallel runs never collide.
    torchrun = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        str(JOB),
        str(out),
    ]
    proc = subprocess.run(torchrun, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.torchrun
def test_analyze_the_run_folder(run_dir):
    job = json.loads((run_dir / "job.json").read_text())
    result = traceview("analyze", "--format", "json", run_dir)
    assert result.code == 0, result.err
    ranks = json.loads(result.out)["ranks"]
    assert [(r["rank"], r["world_size"], r["backend"], r["mode"]) for r in ranks] == [
        (0, 2, "gloo", "cpu"),
        (1, 2, "gloo", "cpu"),
    ]
    for r in ranks:
        assert [s["step"] for s in r["steps"]] == job["steps"]
        (allreduce,) = r["collectives"]
        assert allreduce["collective"] == "all_reduce"
        # Several buckets, and every gradient reduced exactly once per step, fp32.
        assert allreduce["count"] >= 2 * len(job["steps"])
        assert allreduce["bytes_known"] == allreduce["count"]
        assert allreduce["bytes"] == 4 * job["num_params"] * len(job["steps"])
        for s in r["steps"]:
            assert s["comm_us"] > 0 and s["compute_us"] > 0
            assert 0 <= s["overlap_pct"] <= 100
            assert s["overlap_us"] + s["exposed_comm_us"] == pytest.approx(s["comm_us"])
            assert s["compute_us"] + s["exposed_comm_us"] + s["idle_us"] == pytest.approx(
                s["window_us"]
            )


@pytest.mark.torchrun
def test_duplicate_rank_in_the_run_folder_is_refused(run_dir, tmp_path):
    for name in ("rank0.json.gz", "rank1.json.gz"):
        shutil.copy(run_dir / name, tmp_path / name)
    shutil.copy(run_dir / "rank0.json.gz", tmp_path / "rank0-copy.json.gz")
    result = traceview("analyze", tmp_path)
    assert result.code == 2
    assert "rank 0 is claimed by both" in result.err
