"""What each output costs beside `traceview analyze` on the same trace: `export` (the annotated
Perfetto timeline, plain and gzipped) and `report` (the self-contained HTML document), on the
DDP NCCL and the two CPU-only Gloo shapes (DDP, many tiny steps) of benchmarks/bench_shapes.py,
tiled to one size.

Each command runs as its own process, the commands' runs alternating (a shared machine drifts);
medians are reported with each command's CPU and wall time over analyze's. The report's charting
scripts are made once per installation and kept (~/.cache/traceview): the first report after an
install pays ~1.2 s more, and a warm-up run pays it here. Run from the repository root:

    .venv/bin/python benchmarks/bench_outputs.py                 # 1,000 MB, 3 runs
    .venv/bin/python benchmarks/bench_outputs.py --mb 200 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_analyze import MB, Run, measure_once
from bench_shapes import GLOO, ROOT, build

SHAPES = ("DDP, NCCL", GLOO, "CPU-only, Gloo, many tiny steps")


def commands(trace: Path, out: Path) -> dict[str, list[str]]:
    tv = [sys.executable, "-m", "traceview"]
    quiet = ["--no-progress"]
    return {
        "analyze (JSON)": [
            *tv,
            "analyze",
            str(trace),
            "--format",
            "json",
            "-o",
            os.devnull,
            *quiet,
        ],
        "export": [*tv, "export", str(trace), "-o", str(out / "timeline.json"), *quiet],
        "export, gzipped": [*tv, "export", str(trace), "-o", str(out / "timeline.json.gz"), *quiet],
        "report": [*tv, "report", str(trace), "-o", str(out / "report.html"), *quiet],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1000, help="each trace's size in MB")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, default=ROOT / "bench_out" / "shapes")
    args = ap.parse_args()
    with ProcessPoolExecutor(1) as pool:  # built apart: the parent's memory stays small
        traces = pool.submit(build, args.work, args.mb).result()
    print(f"each command on one trace per shape, {args.repeat} runs each (medians)")
    print("| shape | command | wall s | CPU s | peak RSS MB | CPU vs analyze | wall vs analyze |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as out:
        for shape in SHAPES:
            cmds = commands(traces[shape], Path(out))
            measure_once(cmds["report"])  # warm: the charting scripts made and kept
            runs: dict[str, list[Run]] = {name: [] for name in cmds}
            for i in range(args.repeat):
                for name, cmd in cmds.items():
                    runs[name].append(measure_once(cmd))
                print(f"\r{shape}: round {i + 1}/{args.repeat}", end="", file=sys.stderr)
            print(file=sys.stderr)

            def median(name: str, field: str) -> float:
                return statistics.median(getattr(r, field) for r in runs[name])  # noqa: B023

            cpu0, wall0 = median("analyze (JSON)", "cpu_s"), median("analyze (JSON)", "wall_s")
            size = traces[shape].stat().st_size / MB
            for name in cmds:
                cpu, wall = median(name, "cpu_s"), median(name, "wall_s")
                print(f"| {shape}, {size:,.0f} MB | {name} | {wall:.2f} | {cpu:.2f} | "
                      f"{median(name, 'peak_rss_mb'):,.0f} | {cpu / cpu0:.2f}× | "
                      f"{wall / wall0:.2f}× |")  # fmt: skip


if __name__ == "__main__":
    main()
