"""A job's ranks side by side (`analyze` of a folder): min, median, max and the worst rank per
metric, worked out by hand on three built ranks."""

from __future__ import annotations

import json

import pytest

import traceview
from tests import tracebuild as tb
from tests.analysis.test_findings import ALLREDUCE, nccl
from tests.cli.run_cli import traceview as cli
from traceview.analysis.spread import rank_spread


def three_ranks(tmp_path):
    """Rank r: compute [0, 100(r+1)) µs, an all-reduce [50,250). Windows 250, 250, 300;
    overlap 50, 150, 200; exposed 150, 50, 0; overlap % 25, 75, 100."""
    folder = tmp_path / "job"
    folder.mkdir()
    for r in range(3):
        events = [
            tb.step(1, 0, 400),
            tb.launch(1, 1),
            tb.launch(2, 2),
            tb.kernel("volta_sgemm_128x64_nn", 0, 100 * (r + 1), corr=1),
            nccl(ALLREDUCE, "allreduce", 50, 200, corr=2, seq=1, nbytes=1 << 20),
        ]
        tb.write(folder / f"rank{r}.json", tb.document(events, rank=r, world=3))
    return folder


def test_min_median_max_and_the_worst_rank(tmp_path):
    job = traceview.load(three_ranks(tmp_path))
    by = {s.metric: s for s in rank_spread(job.ranks)}
    assert (by["window"].min, by["window"].median, by["window"].max) == (250_000, 250_000, 300_000)
    assert by["window"].worst_rank == 2  # the longest
    assert (by["exposed_comm"].min, by["exposed_comm"].median, by["exposed_comm"].max) == (
        0,
        50_000,
        150_000,
    )
    assert by["exposed_comm"].worst_rank == 0
    assert by["overlap"].worst_rank == 0  # the least hidden: less is worse here
    assert (by["overlap_pct"].min, by["overlap_pct"].median, by["overlap_pct"].max) == (
        25.0,
        75.0,
        100.0,
    )
    assert by["overlap_pct"].worst_rank == 0


@pytest.mark.cli
def test_analyze_of_a_folder_leads_with_the_ranks_side_by_side(tmp_path):
    folder = three_ranks(tmp_path)
    table = cli("analyze", folder).out
    assert table.startswith(f"{folder} · 3 ranks · nccl · gpu · whole traces\n")
    assert "  exposed ms       0.000   0.050  0.150           0" in table
    assert "rank 1 of 3" not in table and "each rank's steps: --per-rank" in table
    per_rank = cli("analyze", folder, "--per-rank").out
    assert all(f"rank {r} of 3" in per_rank for r in range(3))
    doc = json.loads(cli("analyze", folder, "--format", "json").out)
    (summary,) = doc["jobs"]
    assert summary["spread"]["exposed_comm_us"] == {
        "min": 0.0,
        "median": 50.0,
        "max": 150.0,
        "worst_rank": 0,
    }


@pytest.mark.cli
def test_steps_that_no_trace_has_are_refused(tmp_path):
    folder = three_ranks(tmp_path)
    done = cli("analyze", folder, "--steps", "7-9")
    assert (done.code, done.out) == (2, "")
    assert done.err == (
        f"traceview: error: no steps 7-9 in {folder} (steps 1): name steps it has, e.g. --steps 1\n"
    )
