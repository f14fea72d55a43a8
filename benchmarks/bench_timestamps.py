"""What epoch timestamps with fractions cost: `traceview analyze` of one tiled real trace with
its timestamps moved to epoch microseconds, written with fractions and without, side by side.

    .venv/bin/python benchmarks/bench_timestamps.py                # 50 MB, median of 5
    .venv/bin/python benchmarks/bench_timestamps.py --mb 200 --repeat 3
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_analyze import DEFAULT_SOURCES, MB, measure, traceview_cmd
from tile import tile

ROOT = Path(__file__).parents[1]
EPOCH_US = 1_600_000_000_000_000  # 2020 in microseconds: past float64's exact nanoseconds
_TS = re.compile(rb'"ts": (\d+)(\.\d+)?')


def epoch_copies(source: Path, out: Path) -> tuple[Path, Path]:
    """The trace with every ts moved to the epoch: once with its fractions, once without."""
    text = source.read_bytes()
    frac, whole = out / f"{source.stem}.epoch_frac.json", out / f"{source.stem}.epoch_int.json"
    if not frac.exists():
        frac.write_bytes(
            _TS.sub(lambda m: b'"ts": %d%s' % (int(m[1]) + EPOCH_US, m[2] or b".500"), text)
        )
    if not whole.exists():
        whole.write_bytes(_TS.sub(lambda m: b'"ts": %d' % (int(m[1]) + EPOCH_US), text))
    return frac, whole


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "bench_out")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    base = args.out / f"tiled_{args.mb:g}MB.json"
    if not base.exists():
        tile(next(p for p in DEFAULT_SOURCES if p.exists()), base, int(args.mb * MB))
    frac, whole = epoch_copies(base, args.out)
    runs = [(p, measure(traceview_cmd(p), args.repeat)) for p in (whole, frac)]
    print("| timestamps | MB | wall s | CPU s | MB/s per core | peak RSS MB |")
    print("|---|---|---|---|---|---|")
    for path, run in runs:
        size = path.stat().st_size / MB
        label = "epoch, with fractions" if path == frac else "epoch, whole microseconds"
        print(f"| {label} | {size:,.0f} | {run.wall_s:.2f} | {run.cpu_s:.2f} | "
              f"{size / run.cpu_s:,.0f} | {run.peak_rss_mb:,.0f} |")  # fmt: skip
    (_, w), (_, f) = runs
    print(f"\nwith fractions ÷ without, CPU: {f.cpu_s / w.cpu_s:.2f}× (median of {args.repeat})")


if __name__ == "__main__":
    main()
