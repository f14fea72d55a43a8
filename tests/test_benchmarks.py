"""The benchmarks whose figures docs/performance.md quotes still run: each at a size of a few MB,
once, into a folder of its own, printing a row for every shape it measures. (Their figures are
the benchmarks' to measure, not a test's: only that they run is checked here.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"
SMALL = ["--mb", "2", "--repeat", "1"]


@pytest.mark.parametrize(
    ("script", "rows"),
    [
        # (the benchmark, the rows its table has: one a shape, and for the outputs one a command)
        ("bench_critical_path.py", 3),
        ("bench_shapes.py", 6),
        ("bench_outputs.py", 12),
    ],
)
@pytest.mark.cli
def test_a_benchmark_runs_at_a_small_size(tmp_path, script, rows):
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *SMALL, "--work", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    table = [
        line
        for line in done.stdout.splitlines()
        if line.startswith("| ") and not line.startswith("| shape")
    ]
    assert len(table) == rows, done.stdout
    # Every row ends in figures (its last three cells: times, ratios).
    for line in table:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert all(any(ch.isdigit() for ch in c) for c in cells[-3:]), line


def _at_four_ranks(script: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, dict]:
    """A many-rank benchmark run once at 4 ranks: its process and the JSON it wrote."""
    out = tmp_path / "figures.json"
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--ranks", "4", "--repeat", "1",
         "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done, json.loads(out.read_text())


@pytest.mark.browser
def test_the_many_rank_benchmark_runs_at_a_small_size(tmp_path):
    """bench_many_ranks.py at 4 ranks (its store is kept in bench_out/, as its 10,240's is):
    each figure measured, against its target, and written as JSON."""
    done, document = _at_four_ranks("bench_many_ranks.py", tmp_path)
    commands = {"analyze", "ranks", "collectives", "dashboard first page", "analyze, in a bucket",
                "dashboard first page, 4 ranks"}  # fmt: skip
    assert set(document["figures"]) == commands
    assert all(f["wall_s"] > 0 for f in document["figures"].values())
    measured = ("analyze", "ranks", "collectives", "analyze, in a bucket")
    assert all(document["figures"][c]["cpu_s"] > 0 for c in measured)
    assert (document["ranks"] == 4 and "within" in done.stdout) or "OVER" in done.stdout


@pytest.mark.cli
def test_the_bucket_benchmark_runs_at_a_small_size(tmp_path):
    """bench_bucket.py at 4 ranks against its own S3 server: each step measured on disk and in
    the bucket, and written as JSON."""
    figures = _at_four_ranks("bench_bucket.py", tmp_path)[1]["figures"]
    steps = {"first ingest", "ingest, nothing changed", "ingest, one rank changed", "analyze"}
    assert set(figures) == {"disk", "bucket"}
    assert all(set(side) == steps for side in figures.values())
    assert all(f["wall_s"] > 0 for side in figures.values() for f in side.values())
