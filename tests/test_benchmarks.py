"""The benchmarks whose figures docs/performance.md quotes still run: each at a size of a few MB,
once, into a folder of its own, printing a row for every shape it measures. (Their figures are
the benchmarks' to measure, not a test's: only that they run is checked here.)"""

from __future__ import annotations

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
