"""`traceview analyze` on trace shapes side by side, at one size: a DDP NCCL trace (and the same
gzipped, as most traces are kept), a CPU-only Gloo trace, and that Gloo trace written back with
four-decimal times (as Python's `json` leaves a trace a tool has edited), each tiled from a real
trace (benchmarks/tile.py) to the same size.

Each shape's runs alternate with the others' (a shared machine drifts), each its own process;
the medians are reported with the CPU ratio to the NCCL trace. Run from the repository root:

    .venv/bin/python benchmarks/bench_shapes.py                 # 200 MB each, 3 runs
    .venv/bin/python benchmarks/bench_shapes.py --mb 1000 --repeat 5
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
from bench_analyze import MB, Run, measure_once, traceview_cmd
from tile import tile

ROOT = Path(__file__).parents[1]
FIXTURES = ROOT / "tests/fixtures/traces"
SHAPES = {
    "DDP, NCCL": FIXTURES / "nccl_ddp_w2_rank0.json.gz",
    "CPU-only, Gloo": FIXTURES / "gloo_cpu_w300_rank34.json.gz",
}
FOUR_DECIMALS = "CPU-only, Gloo, 4-decimal times"
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
        path = work / f"{source.name.split('.')[0]}-{mb:g}MB.json"
        if not path.exists():
            tile(source, path, int(mb * MB), rank=0)
        out[shape] = path
    four = work / f"gloo-4-decimals-{mb:g}MB.json"
    if not four.exists():
        four.write_bytes(_TIME.sub(_fourth_decimal, out["CPU-only, Gloo"].read_bytes()))
    out[FOUR_DECIMALS] = four
    packed = work / f"{out['DDP, NCCL'].name}.gz"
    if not packed.exists():
        with out["DDP, NCCL"].open("rb") as plain, gzip.open(packed, "wb", compresslevel=6) as gz:
            shutil.copyfileobj(plain, gz, 1 << 20)
    out[GZIPPED] = packed
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200, help="each trace's size in MB")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, default=ROOT / "bench_out" / "shapes")
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


if __name__ == "__main__":
    main()
