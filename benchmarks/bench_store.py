"""The trace store at many ranks: ingest time and memory, store size, and `compare` / `ranks`
on the store against the same commands on the JSON traces.

Synthesizes a job of N ranks by tiling a real NCCL trace to about M MB per rank (benchmarks/
tile.py); each rank gets its own rank number and world size, and its clock shifted by its own
offset, so the cross-rank work (matching every collective, fitting each rank's clock) is real.
Each command runs as its own process; peak RSS is the largest process's (a worker's, where
there are workers). Run from the repository root:

    .venv/bin/python benchmarks/bench_store.py                      # 256 ranks x 50 MB
    .venv/bin/python benchmarks/bench_store.py --ranks 16 --mb 10   # a quick look
    .venv/bin/python benchmarks/bench_store.py --one-step           # 256 small ranks (2.3 MB)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from multiprocessing import Pool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_analyze import DEFAULT_SOURCES, MB, Run, measure_once
from tile import _TS, tile

ROOT = Path(__file__).parents[1]
_WORLD = re.compile(rb'("distributedInfo": \{[^}]*?"rank": )(\d+)(, "world_size": )(\d+)')
ONE_STEP = ROOT / "tests/fixtures/traces/nccl_ddp_w2_rank0_step5.json.gz"  # 2.3 MB of JSON
CLOCK_STEP_US = 137  # rank r's clock runs r × this (mod 10 ms) ahead: offsets to fit


def _rank_trace(args: tuple[Path, Path, int, int]) -> None:
    base, target, rank, ranks = args
    if target.exists():
        return
    text = base.read_bytes()
    text = _WORLD.sub(lambda m: m[1] + b"%d" % rank + m[3] + b"%d" % ranks, text, count=1)
    shift = (rank * CLOCK_STEP_US) % 10_000
    text = _TS.sub(lambda m: b'"ts": %d' % (int(m[1]) + shift), text)
    partial = target.with_name("." + target.name)
    partial.write_bytes(text)
    partial.replace(target)


def synthesize(out: Path, ranks: int, mb: float, one_step: bool) -> Path:
    """out/job/rank<r>.json for every rank (kept between runs: made once)."""
    if one_step:  # the source's one-step excerpt as it is: the many-small-ranks case
        source, mb = ONE_STEP, 0
    else:
        source = next(p for p in DEFAULT_SOURCES if p.exists())
    name = "one-step" if one_step else f"{mb:g}MB"
    job = out / f"job-{name}"
    job.mkdir(parents=True, exist_ok=True)
    base = out / f"base-{name}.json"
    if not base.exists():
        tile(source, base, int(mb * MB), rank=0)
    tasks = [(base, job / f"rank{r}.json", r, ranks) for r in range(ranks)]
    shown = sys.stderr.isatty()  # a log (CI's) gets one line, not one per rank
    with Pool(os.cpu_count() or 1) as pool:
        for i, _ in enumerate(pool.imap_unordered(_rank_trace, tasks), start=1):
            if shown:
                print(f"\rsynthesizing rank traces: {i}/{ranks}", end="", file=sys.stderr)
    print("" if shown else f"synthesized {ranks} rank traces", file=sys.stderr)
    for stale in job.glob("rank*.json"):  # from a run with more ranks
        if int(stale.stem.removeprefix("rank")) >= ranks:
            stale.unlink()
    return job


def size_of(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def tv(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "traceview", *map(str, args)]


def subset_store(store: Path, target: Path, ranks: int) -> Path:
    """A copy of the store holding its job's first `ranks` partitions."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(store, target, ignore=lambda d, names: [
        n for n in names if n.startswith("rank=") and int(n.removeprefix("rank=")) >= ranks
    ])  # fmt: skip
    return target


def row(what: str, run: Run, size_mb: float | None = None) -> str:
    per_core = f"{size_mb / run.cpu_s:,.0f}" if size_mb else "–"
    return (
        f"| {what} | {run.wall_s:,.1f} | {run.cpu_s:,.1f} | {run.cpu_s / run.wall_s:.2f} | "
        f"{per_core} | {run.peak_rss_mb:,.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=256)
    parser.add_argument("--mb", type=float, default=50, help="about this many MB per rank trace")
    parser.add_argument(
        "--one-step",
        action="store_true",
        help="each rank the trace's one-step excerpt (2.3 MB), not a tiling: many small ranks",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench_out" / "store")
    args = parser.parse_args()
    job = synthesize(args.out, args.ranks, args.mb, args.one_step)
    json_mb = size_of(job) / MB
    store = args.out / "S"
    if store.exists():
        shutil.rmtree(store)
    print("ingesting", file=sys.stderr)
    ingest = measure_once(tv("ingest", job, "--store", store, "--no-progress"))
    again = measure_once(tv("ingest", job, "--store", store, "--no-progress"))
    store_mb = size_of(store) / MB
    small_ranks = max(2, args.ranks // 4)
    small = subset_store(store, args.out / "S-small", small_ranks)
    rows = [row(f"ingest {args.ranks} rank traces", ingest, json_mb),
            row("ingest again (all unchanged)", again)]  # fmt: skip
    for command in ("compare", "ranks"):
        print(command, file=sys.stderr)
        on_store = measure_once(tv(command, store, "--format", "json", "-o", os.devnull))
        on_small = measure_once(tv(command, small, "--format", "json", "-o", os.devnull))
        on_json = measure_once(
            tv(command, job, "--format", "json", "-o", os.devnull, "--no-progress")
        )
        rows += [
            row(f"`{command}` on the JSON traces", on_json, json_mb),
            row(f"`{command}` on the store", on_store),
            row(f"`{command}` on the store, {small_ranks} ranks", on_small),
        ]
    print(f"\n{args.ranks} ranks × {json_mb / args.ranks:.0f} MB of JSON ({json_mb:,.0f} MB) · "
          f"{os.cpu_count()} cores · python {sys.version.split()[0]}\n")  # fmt: skip
    print("| what | wall s | CPU s | cores used | MB/s per core | peak RSS MB |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nstore: {store_mb:,.0f} MB for {json_mb:,.0f} MB of JSON "
          f"({100 * store_mb / json_mb:.1f} %)")  # fmt: skip


if __name__ == "__main__":
    main()
