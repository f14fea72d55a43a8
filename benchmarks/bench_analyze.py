"""Speed and memory of `traceview analyze`, end to end, against stdlib json.load.

Builds traces by tiling a real one (benchmarks/tile.py) at the sizes asked, runs each tool as
its own process, and reports wall time, CPU time, MB/s per core and peak RSS. Run from the
repository root:

    .venv/bin/python benchmarks/bench_analyze.py                 # 50, 200, 1000 MB + 8 x 200 MB
    .venv/bin/python benchmarks/bench_analyze.py --sizes 50 --ranks 0   # a quick look
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from tile import tile

ROOT = Path(__file__).parents[1]
DEFAULT_SOURCES = [
    ROOT.parent / "shared/traces/nccl_ddp_resnet_w2_rank0/nccl_data.json.gz",  # Kineto's own text
    ROOT / "tests/fixtures/traces/nccl_ddp_w2_rank0_step5.json.gz",  # the same job, one step
]
MB = 1e6


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float


def measure(cmd: list[str], repeat: int) -> Run:
    """The median (by wall time) of `repeat` runs: this machine's timings vary run to run."""
    runs = sorted((measure_once(cmd) for _ in range(repeat)), key=lambda r: r.wall_s)
    return runs[len(runs) // 2]


def measure_once(cmd: list[str]) -> Run:
    """Run cmd; its wall time, its CPU time with its children's, and the largest process's RSS."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(
            f"failed: {' '.join(cmd)}\n{proc.stderr.read().decode() if proc.stderr else ''}"
        )
    # ru_maxrss (KiB) of wait4 covers the child; worker processes it waited for are included.
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024 / MB)


def traceview_cmd(path: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "traceview",
        "analyze",
        str(path),
        "--format",
        "json",
        "--output",
        os.devnull,
        "--no-progress",
    ]


_TINY = '{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":%d,"dur":1}'
TINY_EVENT_BYTES = len(_TINY % 10**9) + 1


def tiny_events(path: Path, size_bytes: int) -> None:
    """A CPU trace of minimal events, back to back on one thread: the most events per byte a
    profiler writes, so the most memory per byte an analysis needs."""
    with path.open("w") as out:
        out.write('{"traceEvents":[')
        for i in range(size_bytes // TINY_EVENT_BYTES):
            out.write(("," if i else "") + _TINY % (10**9 + 2 * i))
        out.write("]}")


def json_load_cmd(path: Path) -> list[str]:
    code = "import json, sys; json.load(open(sys.argv[1], 'rb'))"
    return [sys.executable, "-c", code, str(path)]


def row(label: str, size: float, run: Run, baseline: Run | None = None) -> str:
    per_core = size / MB / run.cpu_s
    text = (
        f"| {label} | {size / MB:,.0f} | {run.wall_s:.2f} | {run.cpu_s:.2f} | "
        f"{run.cpu_s / run.wall_s:.2f} | {size / MB / run.wall_s:,.0f} | {per_core:,.0f} | "
        f"{run.peak_rss_mb:,.0f} | {run.peak_rss_mb / (size / MB):.2f}× |"
    )
    if baseline:
        text += f" {baseline.wall_s / run.wall_s:.1f}× |"
    return text


HEADER = (
    "| what | MB | wall s | CPU s | cores used | MB/s | MB/s per core | peak RSS MB | "
    "RSS / size | faster than json.load |\n" + "|---" * 10 + "|"
)


def _linear_fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    return my - slope * mx, slope


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="50,200,1000", help="single-trace sizes in MB")
    ap.add_argument("--ranks", type=int, default=8, help="rank traces in the folder run (0: skip)")
    ap.add_argument("--rank-size", type=int, default=200, help="MB per rank trace")
    ap.add_argument("--source", type=Path, help="the real trace to tile")
    ap.add_argument("--work", type=Path, default=ROOT / "bench_out", help="where traces are built")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (median kept)")
    ap.add_argument(
        "--tiny",
        type=int,
        default=200,
        metavar="MB",
        help="also a trace of that many MB of minimal CPU events, the worst mix for memory "
        "per byte (0: skip)",
    )
    args = ap.parse_args()
    source = args.source or next((p for p in DEFAULT_SOURCES if p.exists()), None)
    if source is None or not source.exists():
        raise SystemExit("no source trace: pass --source")
    args.work.mkdir(exist_ok=True)
    print(
        f"source: {source.name} · {os.cpu_count()} cores · python {sys.version.split()[0]} · "
        f"median of {args.repeat} runs"
    )
    print(HEADER)
    singles: list[tuple[float, Run]] = []
    for mb in (int(s) for s in args.sizes.split(",") if s):
        path = args.work / f"tiled_{mb}MB.json"
        if not path.exists():
            print(f"building {path.name} ...", file=sys.stderr)
            tile(source, path, mb * 10**6)
        size = path.stat().st_size
        base = measure(json_load_cmd(path), args.repeat)
        run = measure(traceview_cmd(path), args.repeat)
        print(row(f"json.load, {mb} MB", size, base) + " – |")
        print(row(f"traceview analyze, {mb} MB", size, run, base))
        singles.append((size / 10**9, run))
    if args.ranks:
        folder = args.work / f"ranks_{args.ranks}x{args.rank_size}MB"
        folder.mkdir(exist_ok=True)
        for r in range(args.ranks):
            path = folder / f"rank{r}.json"
            if not path.exists():
                print(f"building {folder.name}/{path.name} ...", file=sys.stderr)
                tile(source, path, args.rank_size * 10**6, rank=r)
        size = sum(p.stat().st_size for p in folder.iterdir())
        run = measure([*traceview_cmd(folder), "--jobs", str(os.cpu_count())], args.repeat)
        print(
            row(f"traceview analyze, folder of {args.ranks} × {args.rank_size} MB", size, run)
            + " – |"
        )

    if args.tiny:
        path = args.work / f"tiny_events_{args.tiny}MB.json"
        if not path.exists():
            print(f"building {path.name} ...", file=sys.stderr)
            tiny_events(path, args.tiny * 10**6)
        size = path.stat().st_size
        run = measure(traceview_cmd(path), args.repeat)
        events = size // TINY_EVENT_BYTES
        print(row(f"traceview analyze, {args.tiny} MB of tiny events", size, run) + " – |")
        print(f"\ntiny events: {run.peak_rss_mb * MB / events:,.0f} bytes of peak RSS per event")

    if len(singles) >= 2:
        fixed, per_gb = _linear_fit([gb for gb, _ in singles], [r.cpu_s for _, r in singles])
        print(
            f"\nCPU seconds ≈ {fixed:.2f} + {per_gb:.2f} × GB (least squares over the single "
            f"traces): {1000 / per_gb:,.0f} MB/s per core once started, {fixed:.2f} s to start"
        )


if __name__ == "__main__":
    main()
