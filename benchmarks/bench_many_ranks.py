"""A job of 10,240 ranks in a store: the CPU time of `analyze`, `ranks` and `collectives` on it,
and the time the dashboard takes to draw its first page (the overview), against their targets,
timed in turn with the page of a 4-rank store (the machine's speed of the moment); and `analyze`
of the same store copied into an S3 bucket (moto's server on 127.0.0.1, started and stopped
here).

The store is one job of the one-step NCCL excerpt given each rank's number and clock offset
(benchmarks/bench_store.py), ingested once and kept in bench_out/dashboard/ (about 23 GB of
JSON while it is made, removed after; ingest packs it, docs/store.md "Packed jobs"). Each
command runs as its own process; CPU is its user + system time with its children's. Run from
the repository root:

    .venv/bin/python benchmarks/bench_many_ranks.py                  # 10,240 ranks
    .venv/bin/python benchmarks/bench_many_ranks.py --ranks 1024     # a quicker look
    .venv/bin/python benchmarks/bench_many_ranks.py --out bench_out/many_ranks.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_analyze import measure_once
from bench_bucket import endpoint, synced
from bench_dashboard import CHROMIUM_ARGS, PAGES, chromium_path, many_rank_store, once
from bench_store import tv

# Issue 58's targets, per command on the 10,240-rank store.
TARGETS = {"analyze": 5.0, "ranks": 5.0, "collectives": 5.0, "dashboard first page": 5.0}
YARDSTICK = 4  # ranks of the store whose first page is timed beside the many-rank one's


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=10_240)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each (median shown)")
    parser.add_argument("--out", type=Path, help="also write the figures here, as JSON")
    args = parser.parse_args()
    store = many_rank_store(args.ranks, 0, one_step=True)
    files = sum(1 for p in store.rglob("*") if p.is_file())
    figures: dict[str, dict[str, float]] = {}
    for command in ("analyze", "ranks", "collectives"):
        runs = [measure_once(tv(command, store, "--format", "json")) for _ in range(args.repeat)]
        figures[command] = {
            "cpu_s": statistics.median(r.cpu_s for r in runs),
            "wall_s": statistics.median(r.wall_s for r in runs),
            "peak_rss_mb": max(r.peak_rss_mb for r in runs),
        }
        print(f"\r{command} done", end="", file=sys.stderr)
    figures["analyze, in a bucket"] = _in_a_bucket(store, args.repeat)
    from playwright.sync_api import sync_playwright

    # The page of a store of YARDSTICK ranks in turn with it: the shared machine's speed varies
    # from hour to hour by more than a change measured here, and this one scales with it.
    small = many_rank_store(YARDSTICK, 0, one_step=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        pages: dict[Path, list[dict[str, float]]] = {small: [], store: []}
        for _ in range(args.repeat):
            for folder, drawn in pages.items():
                drawn.append(once(folder, browser, {"": PAGES[""]}))
        browser.close()
    figures["dashboard first page"] = _page(pages[store])
    figures[f"dashboard first page, {YARDSTICK} ranks"] = _page(pages[small])
    print(file=sys.stderr)
    print(f"a store of one job of {args.ranks:,} ranks ({files:,} files), median of {args.repeat}")
    print(f"  {'':<30} {'CPU s':>7} {'wall s':>7} {'peak RSS MB':>12} {'target':>8}")
    for name, f in figures.items():
        cpu = f"{f['cpu_s']:.2f}" if "cpu_s" in f else "-"
        measured = f.get("cpu_s", f["wall_s"])
        unit = "CPU s" if "cpu_s" in f else "s"
        target = TARGETS.get(name)
        verdict = "-" if target is None else "within" if measured <= target else "OVER"
        said = f"{target:>4g} {unit} {verdict}" if target is not None else verdict
        print(f"  {name:<30} {cpu:>7} {f['wall_s']:>7.2f} {f['peak_rss_mb']:>12,.0f} "
              f"{said}")  # fmt: skip
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        document = {"ranks": args.ranks, "files": files, "targets": TARGETS, "figures": figures}
        args.out.write_text(json.dumps(document, indent=2) + "\n")
    return 0


def _page(drawn: list[dict[str, float]]) -> dict[str, float]:
    return {
        "wall_s": statistics.median(p["scaling"] for p in drawn),
        "from_start_s": statistics.median(p["first page from start"] for p in drawn),
        "peak_rss_mb": max(p["server RSS MB (largest)"] for p in drawn),
    }


def _in_a_bucket(store: Path, repeat: int) -> dict[str, float]:
    """`analyze` of `store` copied into a bucket (no target: the disk's is the measure)."""
    server, env = endpoint()
    try:
        url = synced(store, env, "store")
        runs = [measure_once(tv("analyze", url, "--format", "json"), env) for _ in range(repeat)]
    finally:
        server.terminate()
        server.wait(timeout=30)
    return {
        "cpu_s": statistics.median(r.cpu_s for r in runs),
        "wall_s": statistics.median(r.wall_s for r in runs),
        "peak_rss_mb": max(r.peak_rss_mb for r in runs),
    }


if __name__ == "__main__":
    os.environ.pop("AWS_PROFILE", None)  # the endpoint's keys, not a profile's
    sys.exit(main())
