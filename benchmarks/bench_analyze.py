"""Speed and memory of `traceview analyze`, end to end, against Holistic Trace Analysis and the
floors of reading and decoding the same bytes, all in one run.

Builds traces by tiling a real one (benchmarks/tile.py) at the sizes asked and runs each tool as
its own process, reporting wall time, CPU time (all threads and children), cores used, MB/s per
core and peak RSS, each size also above the fixed cost every run pays (one step of the same
job). Holistic Trace Analysis (load + communication/computation overlap) runs from its own
virtual environment, made on first use (`--hta-venv`; PyPI's HolisticTraceAnalysis).
Run from the repository root:

    .venv/bin/python benchmarks/bench_analyze.py                      # 58 MB … 5 GB, HTA to 263 MB
    .venv/bin/python benchmarks/bench_analyze.py --sizes 58 --hta-max-mb 0 --repeat 1   # a look
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[1]
ONE_STEP = ROOT / "tests/fixtures/traces/nccl_ddp_w2_rank0_step5.json.gz"  # 2.3 MB of JSON
DEFAULT_SOURCES = [
    ROOT / "tests/fixtures/traces/nccl_ddp_w2_rank0.json.gz",  # Kineto's own text, every step
]
MB = 1e6
PURE_PYTHON_ENV = "TRACEVIEW_PURE_PYTHON"  # traceview/parse/fast.py: no compiled scanner
HTA_VERSION = "0.5.0"


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float


def measure(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> Run:
    """The median (by wall time) of `repeat` runs: this machine's timings vary run to run."""
    runs = sorted((measure_once(cmd, env) for _ in range(repeat)), key=lambda r: r.wall_s)
    return runs[len(runs) // 2]


def measure_once(
    cmd: list[str], env: dict[str, str] | None = None, timeout_s: float | None = None
) -> Run:
    """Run cmd; its wall time, its CPU time with its children's, and the largest process's RSS.
    Past `timeout_s` it is stopped (killed) and said, not timed."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, **(env or {})}
    )
    timer = threading.Timer(timeout_s, proc.kill) if timeout_s else None
    if timer:
        timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if timer:
        timer.cancel()
        if wall >= timeout_s:  # type: ignore[operator]
            raise SystemExit(f"stopped after {timeout_s / 60:g} minutes")
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


# The floors: what reading the bytes, and decoding them, cost with nothing after; timed inside
# the process, after its imports (a throughput, without the start-up every tool pays).
_FLOOR = """
import sys, time
from pathlib import Path
from traceview import preload
preload.for_the_program()  # as the program runs: numpy's BLAS threads, idle, would spin
from traceview.parse.source import ByteSource
from traceview.parse.stream import EventStream
path, what = Path(sys.argv[1]), sys.argv[2]
start = time.process_time()
if what == "read":
    f = path.open("rb")
    while f.read(4 << 20):
        pass
else:
    compiled = what == "compiled"  # as traceview reads: a plain file mapped for the scanner
    for _ in EventStream(ByteSource(path).chunks(mapped=compiled), compiled=compiled).batches():
        pass
print(time.process_time() - start)
"""

FLOORS = {
    "read": "open().read(), 4 MB at a time",
    "msgspec": "msgspec's typed decode of the fields used (the pure-Python path)",
    "compiled": "the compiled scanner, one thread, the file mapped, its columns and nothing more",
}


def floor_cpu_s(path: Path, what: str, repeat: int) -> float:
    """The median CPU seconds of `what` on the file, its start-up left out."""
    runs = sorted(
        float(subprocess.check_output([sys.executable, "-c", _FLOOR, str(path), what], text=True))
        for _ in range(repeat)
    )
    return runs[len(runs) // 2]


def floor_row(label: str, size: float, cpu_s: float) -> str:
    per_core = size / MB / cpu_s
    return f"| floor: {label} | {size / MB:,.0f} | – | {cpu_s:.2f} | – | – | {per_core:,.0f} |" + (
        " – |" * 3
    )


def hta_python(venv: Path) -> Path:
    """The Python of a virtual environment holding Holistic Trace Analysis, made if missing."""
    python = venv / "bin/python"
    if not (venv / ".hta-installed").exists():
        print(f"installing HolisticTraceAnalysis {HTA_VERSION} into {venv} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"HolisticTraceAnalysis=={HTA_VERSION}"],
            check=True,
        )
        (venv / ".hta-installed").write_text(HTA_VERSION)
    return python


def hta_cmd(python: Path, path: Path, work: Path) -> list[str]:
    """HTA's load of one rank's trace and its communication/computation overlap."""
    folder = work / f"hta_{path.stem}"
    folder.mkdir(exist_ok=True)
    link = folder / "rank0.json"
    if not link.exists():
        link.symlink_to(path.resolve())
    code = (
        "import sys\nfrom hta.trace_analysis import TraceAnalysis\n"
        "TraceAnalysis(trace_dir=sys.argv[1]).get_comm_comp_overlap(visualize=False)"
    )
    return [str(python), "-c", code, str(folder)]


def row(label: str, size: float, run: Run, versus: Run | None = None) -> str:
    per_core = size / MB / run.cpu_s
    text = (
        f"| {label} | {size / MB:,.0f} | {run.wall_s:.2f} | {run.cpu_s:.2f} | "
        f"{run.cpu_s / run.wall_s:.2f} | {size / MB / run.wall_s:,.0f} | {per_core:,.0f} | "
        f"{run.peak_rss_mb:,.0f} | {run.peak_rss_mb / (size / MB):.2f}× |"
    )
    return text + (f" {versus.wall_s / run.wall_s:.1f}× |" if versus else " – |")


HEADER = (
    "| what | MB | wall s | CPU s | cores used | MB/s | MB/s per core | peak RSS MB | "
    "RSS / size | traceview faster by |\n" + "|---" * 10 + "|"
)


def _linear_fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    return my - slope * mx, slope


TILE = Path(__file__).parent / "tile.py"


def built(source: Path, path: Path, size_bytes: int) -> Path:
    """The tiled trace, built by a process of its own: this one stays small, as the peak RSS
    of each process it starts counts its memory from before the start."""
    if not path.exists():
        print(f"building {path.name} ...", file=sys.stderr)
        subprocess.run([sys.executable, TILE, source, path, str(size_bytes)], check=True)
    return path


def epoch_built(base: Path, work: Path) -> tuple[Path, Path]:
    """tile.epoch_copies of `base` (with fractions, whole), built by a process of its own."""
    subprocess.run([sys.executable, TILE, "--epoch", base, work], check=True)
    return work / f"{base.stem}.epoch_frac.json", work / f"{base.stem}.epoch_int.json"


def measure_pair(a: list[str], b: list[str], repeat: int, by: str = "cpu_s") -> tuple[Run, Run]:
    """Two commands measured in turn (a, b, a, b, ...), each the median of `repeat` (by the
    field `by`): the machine's drift then falls on both alike."""
    runs: tuple[list[Run], list[Run]] = ([], [])
    for _ in range(repeat):
        runs[0].append(measure_once(a))
        runs[1].append(measure_once(b))
    first, second = (sorted(r, key=lambda r: getattr(r, by))[len(r) // 2] for r in runs)
    return first, second


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="58,263,1000,2000,5000", help="trace sizes in MB")
    ap.add_argument("--hta-max-mb", type=int, default=263, help="run HTA up to this size (0: no)")
    ap.add_argument("--pure-max-mb", type=int, default=263, help="the pure-Python path up to here")
    ap.add_argument("--floors-max-mb", type=int, default=1000, help="measure the floors up to here")
    ap.add_argument("--hta-venv", type=Path, default=ROOT / "bench_out/hta-venv")
    ap.add_argument(
        "--epoch-mb", type=int, default=263, help="size of the timestamp comparison (0: none)"
    )
    ap.add_argument("--source", type=Path, help="the real trace to tile")
    ap.add_argument("--work", type=Path, default=ROOT / "bench_out", help="where traces are built")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (median kept)")
    args = ap.parse_args()
    source = args.source or next((p for p in DEFAULT_SOURCES if p.exists()), None)
    if source is None or not source.exists():
        raise SystemExit("no source trace: pass --source")
    args.work.mkdir(exist_ok=True)
    # Start-up as users have it: Python caches traceview's compiled modules on the first run
    # (not where PYTHONDONTWRITEBYTECODE is set, as on some machines: then each run compiles).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "traceview")], check=True)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    hta = hta_python(args.hta_venv) if args.hta_max_mb and min(sizes) <= args.hta_max_mb else None
    print(
        f"source: {source.name} · {os.cpu_count()} cores · python {sys.version.split()[0]} · "
        f"median of {args.repeat} runs · HTA {HTA_VERSION if hta else 'not run'}\n"
    )
    print(HEADER)
    # What every run pays whatever the trace's size: start-up, the libraries loaded, and the
    # part of polars' code that running pages in. The sizes' costs are read above it.
    small = built(ONE_STEP, args.work / "one_step.json", 1)  # one copy: the step as it is
    measure_once(traceview_cmd(small))  # the first run after the compile reads every module cold
    fixed = measure(traceview_cmd(small), args.repeat)
    print(row("traceview analyze, one step: the fixed cost", small.stat().st_size, fixed))
    singles: list[tuple[float, Run]] = []
    for mb in sizes:
        path = built(source, args.work / f"tiled_{mb}MB.json", mb * 10**6)
        size = path.stat().st_size
        theirs = None
        if hta and mb <= args.hta_max_mb:
            # In turn: a change in the machine's speed falls on both (the lead: wall ÷ wall).
            run, theirs = measure_pair(
                traceview_cmd(path), hta_cmd(hta, path, args.work), args.repeat, by="wall_s"
            )
        else:
            run = measure(traceview_cmd(path), args.repeat)
        print(row(f"**traceview analyze, {mb} MB**", size, run, theirs))
        if theirs:
            print(row(f"HTA load + overlap, {mb} MB", size, theirs))
        if mb <= args.pure_max_mb:
            pure = measure(traceview_cmd(path), args.repeat, {PURE_PYTHON_ENV: "1"})
            print(row(f"traceview analyze, pure-Python path, {mb} MB", size, pure))
        if mb <= args.floors_max_mb:
            for what, label in FLOORS.items():
                print(floor_row(f"{label}, {mb} MB", size, floor_cpu_s(path, what, args.repeat)))
        singles.append((size / 10**9, run))
        sys.stdout.flush()

    if args.epoch_mb:
        epoch_rows(source, args)
    print(
        f"\nAbove the fixed cost ({fixed.peak_rss_mb:,.0f} MB peak RSS, {fixed.cpu_s:.2f} CPU s): "
        + "; ".join(
            f"{gb * 1000:,.0f} MB {r.peak_rss_mb - fixed.peak_rss_mb:+,.0f} MB RSS "
            f"({(r.peak_rss_mb - fixed.peak_rss_mb) / (gb * 1000):.2f}× its size), "
            f"{r.cpu_s - fixed.cpu_s:+.2f} CPU s"
            for gb, r in singles
        )
    )
    if len(singles) >= 2:
        start_s, per_gb = _linear_fit([gb for gb, _ in singles], [r.cpu_s for _, r in singles])
        print(
            f"\nCPU seconds ≈ {start_s:.2f} + {per_gb:.2f} × GB (least squares over the sizes): "
            f"{1000 / per_gb:,.0f} MB/s per core once started; CPU seconds per GB at each size: "
            + ", ".join(f"{gb:.2f} GB {r.cpu_s / gb:.2f}" for gb, r in singles if gb >= 0.2)
        )


def epoch_rows(source: Path, args: argparse.Namespace) -> None:
    """The same trace with epoch timestamps written whole and with fractions, measured in turn."""
    base = args.work / f"tiled_{args.epoch_mb}MB.json"
    frac, whole = epoch_built(built(source, base, args.epoch_mb * 10**6), args.work)
    repeat = max(args.repeat, 5)
    timed_whole, timed_frac = measure_pair(traceview_cmd(whole), traceview_cmd(frac), repeat)
    for label, path, run in (("whole", whole, timed_whole), ("with fractions", frac, timed_frac)):
        print(row(f"traceview analyze, epoch µs {label}", path.stat().st_size, run))
    print(
        f"\nfractional ÷ whole timestamps, CPU: {timed_frac.cpu_s / timed_whole.cpu_s:.2f}× "
        f"(medians of {repeat}, measured in turn)"
    )


if __name__ == "__main__":
    main()
