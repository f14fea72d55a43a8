"""What each small trace costs above its bytes: the fixed CPU a worker pays per rank trace.

At 1,024 ranks of a few MB each, an ingest's time is mostly what every trace pays whatever its
size (setting up the tables, each polars call's own cost, writing a partition). This measures
it the way a worker pays it: in one warm process, `ingest_traces` (parse, analyse, write the
rank's partition) on each small trace over and over, alone and 16 at once as a worker takes
small traces (their models built together: loader/parallel.py), with a worker's settings
(polars' pool of one thread, traceview/preload.py), its CPU time (all threads) per trace; and,
its runs among the small trace's, one large tiling of the same trace, whose CPU per MB is the
cost of the bytes. The fixed cost of a small trace is its CPU less its MB times that rate.
Where it goes: the same trace read alone (`read_trace`), analysed from its bytes
(`analyze_trace`), and written.
Run from the repository root:

    .venv/bin/python benchmarks/bench_small.py                  # 3 shapes, 20 runs each
    .venv/bin/python benchmarks/bench_small.py --repeat 5       # a quick look
    .venv/bin/python benchmarks/bench_small.py --engines        # the queries run as polars would
    .venv/bin/python benchmarks/bench_small.py --together 16    # model, measures: alone vs 16
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from traceview import preload

# A worker's settings, before polars loads (the program's own, and the pool of one thread that
# `preload.for_workers` gives each worker process).
preload.for_the_program()
os.environ.setdefault(preload.POLARS_THREADS_ENV, "1")

import polars as pl  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from bench_analyze import MB  # noqa: E402
from tile import tile  # noqa: E402

from traceview import queries  # noqa: E402
from traceview.analysis.rank import rank_reports  # noqa: E402
from traceview.loader.ingest import ingest_traces  # noqa: E402
from traceview.loader.parallel import TOGETHER_AT_MOST, Failure  # noqa: E402
from traceview.loader.rank import analyze_trace, without_events  # noqa: E402
from traceview.model import build_timeline, build_timelines, model_rows  # noqa: E402
from traceview.parse import read_trace  # noqa: E402
from traceview.parse.stream import MAX_EVENT_BYTES  # noqa: E402
from traceview.store.partition import source_of, write_partition  # noqa: E402

ROOT = Path(__file__).parents[1]
FIXTURES = ROOT / "tests/fixtures/traces"
SHAPES = {  # name: a small real rank trace
    "DDP, NCCL, one step": FIXTURES / "nccl_ddp_w2_rank0_step5.json.gz",
    "8 GPUs, all-to-all + all-reduce (torchrec-like), one step": FIXTURES
    / "nccl_w8_rank3_step1010.json.gz",
    "CPU-only, Gloo, the harness's rank (4 steps)": ROOT
    / "sample_traces/cpu_sweep/ddp-dp4/rank1.pt.trace.json.gz",
}
LARGE_MB = 100  # the tiling whose CPU per MB is the cost of the bytes


def cpu_once(fn: Callable[[], object]) -> float:
    """The CPU seconds (every thread of this process) of one call of fn."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def cpu_of(fn: Callable[[], object], repeat: int) -> float:
    """The median CPU seconds of `repeat` calls of fn."""
    return statistics.median(cpu_once(fn) for _ in range(repeat))


def plain_copy(trace: Path, work: Path) -> Path:
    """The trace as plain JSON (a gzip's inflating is a cost of its bytes, measured apart)."""
    target = work / (trace.name.removesuffix(".gz"))
    target.write_bytes(gzip.decompress(trace.read_bytes()))
    return target


def ingester(trace: Path, folders: Path, n: int = 1) -> Callable[[], float]:
    """One worker's task: n ingests of the trace at once (their models built together, as a
    worker takes small traces), each into a partition of its own. Returns the CPU seconds of the
    ingest alone: the folders the partitions go in are made before it and removed after, as the
    store's side of an ingest does outside the worker (store/commit.py)."""

    def ingest() -> float:
        made = [Path(tempfile.mkdtemp(dir=folders)) for _ in range(n)]
        start = time.process_time()
        outcomes = ingest_traces(
            [trace] * n, [m / "partition" for m in made], None, MAX_EVENT_BYTES
        )
        cpu = time.process_time() - start
        assert not any(isinstance(o, Failure) for o in outcomes), outcomes
        for m in made:
            shutil.rmtree(m)
        return cpu

    return ingest


def ingests(small: Path, large: Path, folders: Path, repeat: int) -> tuple[float, float, float]:
    """The median CPU of an ingest of the small trace alone and of each of TOGETHER_AT_MOST
    ingested at once (`repeat` runs each), and of its large tiling (a tenth as many, at least
    two), in rounds of one large run and its share of small ones: the machine's drift falls on
    all alike, and the fixed cost is the difference."""
    n = TOGETHER_AT_MOST
    alone_fn, together_fn = ingester(small, folders), ingester(small, folders, n)
    large_fn = ingester(large, folders)
    alone_fn(), together_fn(), large_fn()  # warm: imports, the scanner, polars' thread pool
    rounds = max(2, repeat // 10)
    alone: list[float] = []
    together: list[float] = []
    large_runs: list[float] = []
    for _ in range(rounds):
        large_runs.append(large_fn())
        for _ in range(max(1, repeat // rounds)):
            alone.append(alone_fn())
            together.append(together_fn() / n)
    return statistics.median(alone), statistics.median(together), statistics.median(large_runs)


def stages(trace: Path, folders: Path, repeat: int) -> dict[str, float]:
    """Where a small trace's ingest goes: read alone, analysed from its bytes, and written."""
    report = analyze_trace(trace, keep_intervals=True)

    def write() -> float:
        folder = Path(tempfile.mkdtemp(dir=folders)) / "partition"
        cpu = cpu_once(partial(write_partition, report, folder, source_of(trace), None))
        shutil.rmtree(folder.parent)
        return cpu

    return {
        "read": cpu_of(lambda: read_trace(trace), repeat),
        "analyze": cpu_of(lambda: analyze_trace(trace, keep_intervals=True), repeat),
        "write": statistics.median(write() for _ in range(repeat)),
    }


# How the lazy queries are run, side by side: (the rows from which polars chooses the engine,
# the optimizer's passes on a table shorter than that).
_WAYS = {
    "every query as polars chooses": (0, queries.SMALL_TABLE_PASSES),
    "small tables in memory, every pass": (queries.IN_MEMORY_BELOW_ROWS, pl.QueryOptFlags()),
    "small tables in memory, few passes (traceview)": (
        queries.IN_MEMORY_BELOW_ROWS,
        queries.SMALL_TABLE_PASSES,
    ),
}


def engines(trace: Path, folders: Path, repeat: int) -> list[float]:
    """The CPU of an ingest with the lazy queries run each of _WAYS, alternating run by run so
    that the machine's drift falls on all alike: medians, in _WAYS' order."""
    ingest = ingester(trace, folders)
    chosen = queries.IN_MEMORY_BELOW_ROWS, queries.SMALL_TABLE_PASSES
    runs: list[list[float]] = [[] for _ in _WAYS]
    try:
        for _ in range(repeat):
            for (limit, passes), into in zip(_WAYS.values(), runs, strict=True):
                queries.IN_MEMORY_BELOW_ROWS, queries.SMALL_TABLE_PASSES = limit, passes
                into.append(ingest())
    finally:
        queries.IN_MEMORY_BELOW_ROWS, queries.SMALL_TABLE_PASSES = chosen
    return [statistics.median(r) for r in runs]


def compare_engines(work: Path, folders: Path, repeat: int) -> None:
    print(
        f"ingest_traces on small rank traces, one warm process, medians of {repeat} runs each, "
        "alternating (CPU ms)"
    )
    print(f"| shape | {' | '.join(_WAYS)} | saved against each |")
    print(f"|---|{'---|' * len(_WAYS)}---|")
    for name, source in SHAPES.items():
        small = plain_copy(source, work)
        ingester(small, folders)()  # warm
        *others, ours = engines(small, folders, repeat)
        saved = ", ".join(f"{(o - ours) * 1000:.1f} ({1 - ours / o:.0%})" for o in others)
        cells = " | ".join(f"{s * 1000:.1f}" for s in (*others, ours))
        print(f"| {name} | {cells} | {saved} |")


def compare_together(n: int, repeat: int) -> None:
    """The model of each shape's trace built alone and in a batch of n copies of it
    (model/batch.py), and its measures taken alone and n at once (analysis/stack.py),
    alternating run by run: CPU ms a rank, medians."""
    print(
        f"the model (build_timeline) and the measures (rank_report) of small rank traces, one "
        f"warm process, alone and {n} at once, medians of {repeat} runs each, alternating (CPU "
        f"ms a rank)"
    )
    print(f"| shape | model alone | {n} at once | saved | measures alone | {n} at once | saved |")
    print("|---|---|---|---|---|---|---|")
    for name, source in SHAPES.items():
        trace = model_rows(read_trace(source))
        batch = [trace] * n
        model = per_rank(partial(build_timeline, trace), partial(build_timelines, batch), n, repeat)
        described = without_events(trace)
        timeline = build_timeline(trace)
        one = partial(rank_reports, [described], [timeline], keep_intervals=[True])
        many = partial(rank_reports, [described] * n, [timeline] * n, keep_intervals=[True] * n)
        measures = per_rank(one, many, n, repeat)
        print(f"| {name} | {model} | {measures} |")


def per_rank(alone_fn: Callable[[], object], together_fn: Callable[[], object], n: int,
             repeat: int) -> str:  # fmt: skip
    """'alone | together | saved' cells: median CPU ms a rank, alone and n at once."""
    alone_fn(), together_fn()  # warm
    alone: list[float] = []
    together: list[float] = []
    for _ in range(repeat):
        alone.append(cpu_once(alone_fn))
        together.append(cpu_once(together_fn) / n)
    a, t = statistics.median(alone), statistics.median(together)
    return f"{a * 1000:.1f} | {t * 1000:.1f} | {(a - t) * 1000:.1f} ({1 - t / a:.0%})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--work", type=Path, default=ROOT / "bench_out" / "small")
    parser.add_argument(
        "--engines",
        action="store_true",
        help="only compare polars' way of running the lazy queries (its engine, every optimizer "
        "pass) with traceview's",
    )
    parser.add_argument(
        "--together",
        type=int,
        metavar="N",
        help="only compare each shape's model built alone with it built N at once",
    )
    args = parser.parse_args()
    if args.together:
        compare_together(args.together, args.repeat)
        return
    args.work.mkdir(parents=True, exist_ok=True)
    folders = Path(tempfile.mkdtemp(dir=args.work))
    if args.engines:
        try:
            compare_engines(args.work, folders, args.repeat)
        finally:
            shutil.rmtree(folders)
        return
    try:
        rows = []
        for name, source in SHAPES.items():
            print(f"{name} …", file=sys.stderr)
            small = plain_copy(source, args.work)
            large = args.work / f"{small.stem}-{LARGE_MB}MB.json"
            if not large.exists():
                tile(small, large, LARGE_MB * int(MB))
            mb, large_mb = small.stat().st_size / MB, large.stat().st_size / MB
            alone_s, together_s, large_s = ingests(small, large, folders, args.repeat)
            measured = {"ingest": alone_s, "together": together_s,
                        **stages(small, folders, args.repeat)}  # fmt: skip
            rows.append((name, mb, large_s / large_mb, measured))
    finally:
        shutil.rmtree(folders)
    print(
        "ingest_traces on small rank traces, one warm process with a worker's settings, medians of "
        f"{args.repeat} (CPU ms a trace, alone and {TOGETHER_AT_MOST} at once as a worker takes "
        f"small traces; per MB: from a {LARGE_MB} MB tiling of the same trace, its runs among "
        "the small trace's)"
    )
    print(
        "| shape | MB | of which its bytes | alone: CPU ms | fixed ms | "
        f"{TOGETHER_AT_MOST} at once: CPU ms | fixed ms | read | analyze | write |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, mb, per_mb, c in rows:
        ms = {k: v * 1000 for k, v in c.items()}
        bytes_ms = per_mb * mb * 1000
        print(
            f"| {name} | {mb:.1f} | {bytes_ms:.0f} ({per_mb * 1000:.1f} ms/MB) | "
            f"{ms['ingest']:.0f} | {ms['ingest'] - bytes_ms:.0f} | {ms['together']:.0f} | "
            f"{ms['together'] - bytes_ms:.0f} | {ms['read']:.0f} | {ms['analyze']:.0f} | "
            f"{ms['write']:.0f} |"
        )


if __name__ == "__main__":
    main()
