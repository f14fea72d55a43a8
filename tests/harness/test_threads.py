"""Like-for-like runs: every rank runs the same intra-op threads at every DP degree (1 on CPU
unless asked), the run record says what each rank ran with, and `compare` gives no E(N) between
runs that differ in it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.cli.run_cli import traceview
from tests.harness.conftest import SMALL, sweep

pytestmark = pytest.mark.torchrun


def _ranks(run) -> list[dict]:
    return json.loads((run / "run.json").read_text())["ranks"]


def test_threads_are_pinned_recorded_and_compared_like_for_like(tmp_path):
    done = sweep(tmp_path / "same", "--strategies", "ddp", "--dp", "1,2", "--device", "cpu",
                 "--", *SMALL)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    dp1, dp2 = tmp_path / "same" / "ddp-dp1", tmp_path / "same" / "ddp-dp2"
    usable = sorted(os.sched_getaffinity(0))
    for run in (dp1, dp2):  # a DP-1 run too: torchrun leaves its one process every core
        for rank in _ranks(run):
            assert rank["intra_op_threads"] == 1
            assert rank["inter_op_threads"] >= 1 and rank["cpus"] == usable
    same = json.loads(traceview("compare", dp1, dp2, "--format", "json").out)["runs"]
    assert [(r["dp"], r["threads_per_rank"]) for r in same] == [(1, 1), (2, 1)]
    assert same[1]["efficiency"] is not None
    assert not any(c.startswith("no E(N)") for c in same[1]["caveats"])

    other = tmp_path / "four" / "ddp-dp1"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1",
           "-m", "instrumented_train", "--strategy", "ddp", "--device", "cpu", "--threads", "4",
           "--out", str(other), *SMALL]  # fmt: skip
    ran = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    assert [r["intra_op_threads"] for r in _ranks(other)] == [4]
    if len(usable) < 4:  # 1 rank × 4 threads on fewer cores: said
        assert "intra-op threads on this node exceed the" in ran.stderr
    unlike = json.loads(traceview("compare", other, dp2, "--format", "json").out)["runs"]
    assert unlike[1]["efficiency"] is None
    assert (
        "no E(N): its DP-1 run ran 4 intra-op threads per rank and this one 1 "
        "(rerun both with the same --threads)"
    ) in unlike[1]["caveats"]


def test_a_sweep_says_when_its_ranks_would_share_cores(tmp_path):
    from instrumented_train.sweep import oversubscribed, parse_args

    cores = len(os.sched_getaffinity(0))
    over = parse_args(["--dp", f"1,{cores + 1}", "--device", "cpu", "--out", str(tmp_path)])
    assert oversubscribed(*over) == (
        f"DP {cores + 1} × 1 intra-op thread per rank exceed the {cores} "
        f"{'core' if cores == 1 else 'cores'} this machine "
        "lets the sweep use: those ranks compete for cores, and their step times and E(N) "
        "measure that"
    )
    within = parse_args(["--dp", f"1,{cores}", "--device", "cpu", "--out", str(tmp_path)])
    assert oversubscribed(*within) is None
    doubled = parse_args(
        ["--dp", f"1,{cores}", "--device", "cpu", "--out", str(tmp_path), "--", "--threads", "2"]
    )
    assert "× 2 intra-op threads" in (oversubscribed(*doubled) or "")
