"""What walking the critical path costs beside loading the trace: on the DDP NCCL and the
two CPU-only Gloo shapes of benchmarks/bench_shapes.py, tiled to one size, each trace loaded once
with its intervals kept, then `Job.critical_path()` timed (a fresh job each run: the walk is
cached per job). Run from the repository root:

    .venv/bin/python benchmarks/bench_critical_path.py               # 1,000 MB, 3 runs
    .venv/bin/python benchmarks/bench_critical_path.py --mb 200 --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import msgspec
from bench_shapes import GLOO, ROOT, build

import traceview

SHAPES = ("DDP, NCCL", GLOO, "CPU-only, Gloo, many tiny steps")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1000, help="each trace's size in MB")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, default=ROOT / "bench_out" / "shapes")
    args = ap.parse_args()
    traces = build(args.work, args.mb)
    print("| shape | steps | load s | walk s (median) | min | max |")
    print("|---|---|---|---|---|---|")
    for shape in SHAPES:
        began = time.perf_counter()
        job = traceview.load(traces[shape], keep_intervals=True)
        loaded = time.perf_counter() - began
        times = []
        for _ in range(args.repeat):
            # The walk is cached per job: timed on a new one each run.
            fresh = msgspec.structs.replace(job)
            began = time.perf_counter()
            found = fresh.critical_path()
            times.append(time.perf_counter() - began)
        walk = f"{statistics.median(times):.2f} | {min(times):.2f} | {max(times):.2f}"
        print(f"| {shape}, {args.mb:g} MB | {found.steps.height:,} | {loaded:.2f} | {walk} |")


if __name__ == "__main__":
    main()
