"""The tracked figures: a few ratios measured side by side on this machine, written as JSON, and
checked against the limits in benchmarks/tracked.json (`--check`: exit 1 past any). CI runs it.

    .venv/bin/python benchmarks/track.py --check     # minutes (the 1,024-rank store made once)
    .venv/bin/python benchmarks/track.py --figures analyze,peers --check   # + the lead over HTA

Each figure is a ratio of CPU seconds (user + system) of two commands run in turn on the same
machine (each side's least of `--repeat` runs), or of peak RSS to the file's size, so a slower
or busier machine moves both sides: a change to traceview moves only one. The reference for a
trace's analysis is the same file's plain JSON decode by msgspec, after its imports (the floor
any reader of the text pays); for the fixed cost, a process that imports traceview's libraries
(polars, numpy, msgspec) and stops. What a many-rank ingest pays per trace is the difference
between ingesting 128 and 16 one-step rank traces (its starts cancel), per trace, against that
decode of one of them. The dashboard's is wall seconds to its first page on a store of 1,024
ranks against one of 4.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_analyze import (
    DEFAULT_SOURCES,
    MB,
    ONE_STEP,
    ROOT,
    Run,
    built,
    hta_cmd,
    hta_python,
    measure_once,
    traceview_cmd,
)
from bench_store import synthesize, tv

LIMITS = Path(__file__).parent / "tracked.json"
SIZES_MB = (58, 263)
INGESTED = (16, 128)  # rank traces: the per-trace cost is the difference over the difference
DASHBOARD_RANKS = (4, 1024)
GROUPS = ("analyze", "ingest", "dashboard", "peers")
DEFAULT_GROUPS = ("analyze", "ingest", "dashboard")  # peers: HTA's venv takes minutes to make
_IMPORTS = [sys.executable, "-c", "import msgspec, numpy, polars"]
_DECODE = """
import sys, time, msgspec
from pathlib import Path
data = Path(sys.argv[1]).read_bytes()
start = time.process_time()
msgspec.json.decode(data)
print(time.process_time() - start)
"""


def _reference_cpu_s(path: Path) -> float:
    """The CPU seconds of msgspec's plain decode of the file (in a process of its own, its
    imports and its read left out)."""
    return float(subprocess.check_output([sys.executable, "-c", _DECODE, str(path)], text=True))


def _least_pair(a: list[str], b: list[str], repeat: int) -> tuple[Run, Run]:
    """Two commands run in turn `repeat` times: each one's run of least CPU time (the one the
    machine's other work disturbed least; a median still moved 30 % under load)."""
    runs: tuple[list[Run], list[Run]] = ([], [])
    for _ in range(repeat):
        runs[0].append(measure_once(a))
        runs[1].append(measure_once(b))
    return min(runs[0], key=lambda r: r.cpu_s), min(runs[1], key=lambda r: r.cpu_s)


def _ingest_cpu_s(job: Path, store: Path) -> float:
    """The CPU seconds of `traceview ingest` of the job into an empty store."""
    shutil.rmtree(store, ignore_errors=True)
    return measure_once(tv("ingest", job, "--store", store)).cpu_s


def ingest_per_trace(work: Path, repeat: int) -> float:
    """The CPU a many-rank ingest pays per small trace (its bytes included), ÷ the plain decode
    of one such trace: CPU(128 ranks) − CPU(16 ranks), over 112, each side's least of `repeat`."""
    few, many = INGESTED
    whole = synthesize(work / "ingest", many, 0, one_step=True)
    part = work / "ingest" / f"first-{few}"
    part.mkdir(exist_ok=True)
    for rank in range(few):
        link = part / f"rank{rank}.json"
        if not link.exists():
            os.link(whole / link.name, link)
    store = work / "ingest" / "store"
    fewer, more = [], []
    for _ in range(repeat):
        fewer.append(_ingest_cpu_s(part, store))
        more.append(_ingest_cpu_s(whole, store))
    shutil.rmtree(store, ignore_errors=True)
    per_trace = (min(more) - min(fewer)) / (many - few)
    return per_trace / min(_reference_cpu_s(whole / "rank0.json") for _ in range(repeat))


def dashboard_first_page(repeat: int) -> dict[str, float]:
    """Seconds from a fresh `traceview dashboard` on a store of one job to its first page drawn
    in headless Chromium, at 1,024 one-step ranks ÷ at 4 (each side's least of `repeat`, in
    turn; the stores are made once, in bench_out/dashboard)."""
    from bench_dashboard import CHROMIUM_ARGS, chromium_path, many_rank_store, once
    from playwright.sync_api import sync_playwright

    few, many = DASHBOARD_RANKS
    stores = [many_rank_store(few, 0, one_step=True), many_rank_store(many, 0, one_step=True)]
    chromium = chromium_path()
    seconds: tuple[list[float], list[float]] = ([], [])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        for _ in range(repeat):
            for side, store in zip(seconds, stores, strict=True):
                side.append(once(store, browser, pages={"": 2})["first page from start"])
        browser.close()
    return {
        f"dashboard_{many}_ranks_first_page_per_{few}": min(seconds[1]) / min(seconds[0]),
        f"dashboard_{many}_ranks_first_page_s": min(seconds[1]),  # said, not checked
    }


def measured(work: Path, repeat: int, groups: set[str], sizes: tuple[int, ...]) -> dict[str, float]:
    source = next(p for p in DEFAULT_SOURCES if p.exists())
    figures: dict[str, float] = {}
    if "analyze" in groups:
        one_step, imports = _least_pair(traceview_cmd(ONE_STEP), _IMPORTS, repeat)
        figures["fixed_cost_per_imports"] = one_step.cpu_s / imports.cpu_s
    if "ingest" in groups:
        figures["ingest_cpu_per_trace_per_decode"] = ingest_per_trace(work, repeat)
    if "dashboard" in groups:
        figures.update(dashboard_first_page(repeat))
    for mb in sizes if groups & {"analyze", "peers"} else ():
        trace = built(source, work / f"track_{mb}MB.json", int(mb * MB))
        size_mb = trace.stat().st_size / MB
        runs: list[Run] = []
        references: list[float] = []
        for _ in range(repeat if "analyze" in groups else 0):  # in turn: drift falls on both
            runs.append(measure_once(traceview_cmd(trace)))
            references.append(_reference_cpu_s(trace))
        if "analyze" in groups:
            run, reference = min(runs, key=lambda r: r.cpu_s), min(references)
            figures[f"analyze_{mb}mb_cpu_per_decode"] = run.cpu_s / reference
            figures[f"analyze_{mb}mb_rss_per_size"] = run.peak_rss_mb / size_mb
            figures[f"analyze_{mb}mb_mb_per_cpu_s"] = size_mb / run.cpu_s  # said, not checked
        if "peers" in groups:
            hta = hta_python(work / "hta-venv")
            ours, theirs = _least_pair(traceview_cmd(trace), hta_cmd(hta, trace, work), repeat)
            figures[f"hta_cpu_per_traceview_{mb}mb"] = theirs.cpu_s / ours.cpu_s
    return figures


def checked(figures: dict[str, float], limits: dict[str, dict[str, float]]) -> list[str]:
    """What is past its limit, one line each (a figure not measured is not checked)."""
    past = []
    for name, limit in limits.items():
        value = figures.get(name)
        if value is None:
            continue
        if "max" in limit and value > limit["max"]:
            past.append(f"{name} = {value:.3f}, over its limit {limit['max']}")
        if "min" in limit and value < limit["min"]:
            past.append(f"{name} = {value:.3f}, under its limit {limit['min']}")
    return past


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=ROOT / "bench_out" / "track")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--figures",
        default=",".join(DEFAULT_GROUPS),
        help=f"groups of figures, of {', '.join(GROUPS)} (default: %(default)s)",
    )
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES_MB)), help="trace sizes in MB (default: 58,263)"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 past any limit")
    parser.add_argument(
        "--limits", type=Path, default=LIMITS, help="the limits' file (default: tracked.json)"
    )
    parser.add_argument("--out", type=Path, help="the figures' JSON (default: WORK/tracked.json)")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    sizes = tuple(int(mb) for mb in args.sizes.split(",") if mb)
    groups = {g for g in args.figures.split(",") if g}
    if groups - set(GROUPS):
        unknown = ", ".join(sorted(groups - set(GROUPS)))
        parser.error(f"--figures: {unknown} is not one of {', '.join(GROUPS)}")
    figures = measured(args.work, args.repeat, groups, sizes)
    limits = json.loads(args.limits.read_text())["limits"]
    past = checked(figures, limits)
    doc = {"figures": figures, "limits": limits, "past": past}
    out = args.out or args.work / "tracked.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    for name, value in figures.items():
        print(f"{name}: {value:.3f}")
    for line in past:
        print(f"track: {line}", file=sys.stderr)
    print(f"track: figures in {out}", file=sys.stderr)
    return 1 if args.check and past else 0


if __name__ == "__main__":
    sys.exit(main())
