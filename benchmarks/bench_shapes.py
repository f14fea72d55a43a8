"""`traceview analyze` on trace shapes side by side, at one size: a DDP NCCL trace (and the same
gzipped, as most traces are kept), an 8-GPU job's rank with all-to-all and all-reduce on several
streams (torchrec-like), a CPU-only Gloo DDP rank (the harness's: its ops, backward and
buckets), that Gloo trace written back with four-decimal times (as Python's `json` leaves a
trace a tool has edited), and a CPU-only Gloo rank of many tiny steps (a 300-rank job's: a step
and ten Gloo calls every 5 KB, the most steps and calls per byte of any trace here), each tiled
from a real trace (benchmarks/tile.py) to the same size.

Each shape's runs alternate with the others' (a shared machine drifts), each its own process;
the medians are reported with the CPU ratio to the NCCL trace. With --peers, Holistic Trace
Analysis (its load and communication/computation overlap, from the virtual environment
bench_analyze.py makes) runs on each plain-JSON shape too, and TraceLens where --tracelens-python
names a Python that has it (it is not on PyPI: install it from its repository), each run after
one of traceview's on the same trace, whose wall time its lead is read against; a peer that
fails on a shape is said, not timed. Run from the repository root:

    .venv/bin/python benchmarks/bench_shapes.py                 # 200 MB each, 3 runs
    .venv/bin/python benchmarks/bench_shapes.py --mb 1000 --repeat 5
    .venv/bin/python benchmarks/bench_shapes.py --peers          # HTA beside each shape
"""

from __future__ import annotations

import argparse
import gzip
import re
import shutil
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_analyze import HTA_VERSION, MB, Run, hta_cmd, hta_python, measure_once, traceview_cmd
from tile import tile

ROOT = Path(__file__).parents[1]
FIXTURES = ROOT / "tests/fixtures/traces"
GLOO = "CPU-only, Gloo, DDP"
SHAPES = {
    "DDP, NCCL": FIXTURES / "nccl_ddp_w2_rank0.json.gz",
    "8 GPUs, all-to-all + all-reduce (torchrec-like)": FIXTURES / "nccl_w8_rank3_step1010.json.gz",
    GLOO: ROOT / "sample_traces/cpu_sweep/ddp-dp4/rank1.pt.trace.json.gz",
    "CPU-only, Gloo, many tiny steps": FIXTURES / "gloo_cpu_w300_rank34.json.gz",
}
FOUR_DECIMALS = "CPU-only, Gloo, DDP, 4-decimal times"
GZIPPED = "DDP, NCCL, gzip"
_TIME = re.compile(rb'("(?:ts|dur)": ?)(-?\d+(?:\.\d+)?)(?=[,}])')


def _fourth_decimal(m: re.Match[bytes]) -> bytes:
    """A time with a fourth decimal, as json.dumps writes the float."""
    return m[1] + repr(round(float(m[2]) + 0.00015, 4)).encode()


def build(work: Path, mb: float) -> dict[str, Path]:
    """Each shape's trace (kept between runs: made once per size)."""
    work.mkdir(parents=True, exist_ok=True)
    out = {}
    for shape, source in SHAPES.items():
        name = source.name.split(".")[0]
        if name.startswith("rank"):  # a run folder's rank: named with its run
            name = f"{source.parent.name}-{name}"
        path = work / f"{name}-{mb:g}MB.json"
        if not path.exists():
            tile(source, path, int(mb * MB), rank=0)
        out[shape] = path
    four = work / f"{out[GLOO].stem}-4-decimals.json"
    if not four.exists():
        four.write_bytes(_TIME.sub(_fourth_decimal, out[GLOO].read_bytes()))
    out[FOUR_DECIMALS] = four
    packed = work / f"{out['DDP, NCCL'].name}.gz"
    if not packed.exists():
        with out["DDP, NCCL"].open("rb") as plain, gzip.open(packed, "wb", compresslevel=6) as gz:
            shutil.copyfileobj(plain, gz, 1 << 20)
    out[GZIPPED] = packed
    return out


def tracelens_cmd(python: Path, path: Path) -> list[str]:
    """TraceLens' tree of one rank's trace and its GPU timeline breakdown (its own first step)."""
    code = (
        "import sys\nfrom TraceLens import TreePerfAnalyzer\n"
        "TreePerfAnalyzer.from_file(sys.argv[1]).get_df_gpu_timeline()"
    )
    return [str(python), "-c", code, str(path)]


PEER_TIMEOUT_S = 300  # a peer still reading a trace after this is stopped, and said to be


def peer_runs(cmd: list[str], ours: list[str], repeat: int) -> tuple[list[Run], list[Run]] | str:
    """`repeat` runs of a peer's command, each after one of traceview's on the same trace (a
    shared machine drifts: in turn, the drift falls on both), or why the peer failed on this
    trace (one line)."""
    theirs: list[Run] = []
    mine: list[Run] = []
    try:
        for _ in range(repeat):
            mine.append(measure_once(ours))
            theirs.append(measure_once(cmd, timeout_s=PEER_TIMEOUT_S))
    except SystemExit as e:
        lines = [line for line in str(e).splitlines() if line.strip()]
        if lines and lines[0].startswith("stopped after"):
            return lines[0]
        return f"failed: {lines[-1][:160] if lines else 'no message'}"
    return theirs, mine


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200, help="each trace's size in MB")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, default=ROOT / "bench_out" / "shapes")
    ap.add_argument("--peers", action="store_true", help="HTA (and TraceLens) on each shape")
    ap.add_argument("--hta-venv", type=Path, default=ROOT / "bench_out/hta-venv")
    ap.add_argument("--tracelens-python", type=Path, help="a Python with TraceLens installed")
    args = ap.parse_args()
    # Built in a process of its own: a parent grown by the tiling would count in every measured
    # child's peak RSS (a child starts as a copy of it).
    with ProcessPoolExecutor(1) as pool:
        traces = pool.submit(build, args.work, args.mb).result()
    runs: dict[str, list[Run]] = {shape: [] for shape in traces}
    for i in range(args.repeat):
        for shape, path in traces.items():
            runs[shape].append(measure_once(traceview_cmd(path)))
        print(f"\rround {i + 1}/{args.repeat}", end="", file=sys.stderr)
    print(file=sys.stderr)

    def median(shape: str, field: str) -> float:
        return statistics.median(getattr(r, field) for r in runs[shape])

    base, base_wall = median("DDP, NCCL", "cpu_s"), median("DDP, NCCL", "wall_s")
    print(f"traceview analyze, {args.repeat} runs each (medians; MB: of JSON, inflated)")
    print(
        "| shape | MB | wall s | CPU s | cores | MB/s per core | peak RSS MB | RSS / MB "
        "| CPU vs NCCL | wall vs NCCL |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for shape, path in traces.items():
        size = (path.with_suffix("") if shape == GZIPPED else path).stat().st_size / MB
        cpu, wall = median(shape, "cpu_s"), median(shape, "wall_s")
        rss = median(shape, "peak_rss_mb")
        print(
            f"| {shape} | {size:,.0f} | {wall:.2f} | {cpu:.2f} | {cpu / wall:.2f} | "
            f"{size / cpu:,.0f} | {rss:,.0f} | {rss / size:.2f} | {cpu / base:.2f}× | "
            f"{wall / base_wall:.2f}× |"
        )
    if args.peers:
        peers(traces, args)


def peers(traces: dict[str, Path], args: argparse.Namespace) -> None:
    """Each peer on each plain-JSON shape, in turn with traceview: medians, and traceview's
    lead (the peer's median wall time over traceview's in the same runs)."""
    tools = {f"HTA {HTA_VERSION}": lambda p: hta_cmd(hta_python(args.hta_venv), p, args.work)}
    if args.tracelens_python:
        tools["TraceLens"] = lambda p: tracelens_cmd(args.tracelens_python, p)
    print(f"\npeers, {args.repeat} runs each, in turn with traceview's (medians)")
    print("| shape | tool | wall s | CPU s | peak RSS MB | traceview wall s | traceview faster by "
          "(wall) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for shape, path in traces.items():
        if shape == GZIPPED:
            continue
        for tool, cmd in tools.items():
            found = peer_runs(cmd(path), traceview_cmd(path), args.repeat)
            if isinstance(found, str):
                print(f"| {shape} | {tool} | {found} | – | – | – | – |")
                continue
            theirs, mine = found
            wall = statistics.median(r.wall_s for r in theirs)
            cpu = statistics.median(r.cpu_s for r in theirs)
            rss = statistics.median(r.peak_rss_mb for r in theirs)
            ours = statistics.median(r.wall_s for r in mine)
            print(f"| {shape} | {tool} | {wall:.2f} | {cpu:.2f} | {rss:,.0f} | {ours:.2f} | "
                  f"{wall / ours:.1f}× |")  # fmt: skip
    if not args.tracelens_python:
        print("\nTraceLens: not run (it is not on PyPI; install it from its repository into a "
              "virtual environment and pass --tracelens-python).")  # fmt: skip


if __name__ == "__main__":
    main()
