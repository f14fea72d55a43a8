"""The README's "Profile your own job": its example script under a real torchrun on CPU, then
traceview on what it wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.run_cli import traceview

pytest.importorskip("torch")
pytestmark = pytest.mark.torchrun
SCRIPT = Path(__file__).parents[2] / "examples" / "profile_your_job.py"


def test_the_example_job_gives_steps_and_message_sizes(tmp_path):
    out, store = tmp_path / "my-run", tmp_path / "S"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           str(SCRIPT), "--out", str(out), "--store", str(store)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "rank0.pt.trace.json.gz",
        "rank1.pt.trace.json.gz",
    ]
    analyzed = traceview("analyze", out, "--format", "json")
    assert analyzed.code == 0, analyzed.err
    ranks = json.loads(analyzed.out)["ranks"]
    assert [(r["rank"], r["world_size"], r["backend"]) for r in ranks] == [
        (0, 2, "gloo"),
        (1, 2, "gloo"),
    ]
    for r in ranks:
        assert [s["step"] for s in r["steps"]] == [2, 3, 4]  # the schedule's kept steps
        assert r["total"]["comm_us"] > 0 and r["total"]["compute_us"] > 0
    calls = json.loads(traceview("collectives", out, "--format", "json").out)["jobs"][0]["calls"]
    # 4 × (512×512 + 512) fp32 parameters in 1 MB buckets: every all-reduce has its size.
    assert calls and all(c["collective"] == "all_reduce" and c["bytes"] > 0 for c in calls)
    assert (
        sum(c["bytes"] for c in calls if c["rank"] == 0 and c["step"] == 2)
        == 4 * (512 * 512 + 512) * 4
    )
    stored = traceview("analyze", store, "--format", "json")
    without_job = [{k: v for k, v in r.items() if k != "job"} for r in ranks]  # named apart
    assert [
        {k: v for k, v in r.items() if k != "job"} for r in json.loads(stored.out)["ranks"]
    ] == (without_job)
