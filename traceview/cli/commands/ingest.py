"""`traceview ingest PATH... --store DIR`: parse each rank trace once into a Parquet store
that every command reads as it reads traces (docs/store.md)."""

from __future__ import annotations

import argparse

from traceview.cli import options
from traceview.cli.progress import Progress
from traceview.cli.say import say
from traceview.loader.engines import ENGINES
from traceview.loader.ingest import ingest
from traceview.plain import counted


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ingest",
        help="parse traces once into a Parquet trace store (for many ranks, or many looks)",
        description="Parse each rank trace once into a trace store: Parquet partitions "
        "job=NAME/rank=N that analyze, collectives, ranks, compare, export, report and the "
        "dashboard read as they read traces. Traces already stored, unchanged, are skipped.",
    )
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="trace file, run folder, sweep, or folder of runs"
    )
    p.add_argument("--store", required=True, metavar="DIR", help="the store (made if need be)")
    p.add_argument("--job", metavar="NAME", help="the job's name in the store, for a single run "
                   "(default: its folder's name)")  # fmt: skip
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="local: a process per core (default); ray: one Ray task per trace",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="the Ray cluster to join (default: RAY_ADDRESS, else Ray started on this machine)",
    )
    p.add_argument("--jobs", "-j", type=options.positive_int, metavar="N",
                   help="processes to use with the local engine (default: cores)")  # fmt: skip
    p.add_argument(
        "--shard",
        type=options.shard,
        metavar="K/N",
        help="only the K-th of N parts of each run's traces: N processes (a scheduler's array) "
        "build one store; the store says which shards are missing until all are in",
    )
    options.add_comm_pattern(p)
    options.add_max_event(p)
    options.add_progress(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    progress = Progress(args.progress)

    def waiting(holder: str) -> None:
        progress.clear_line()
        say("waiting", f"{args.store}: another writer is moving its partitions into place "
            f"({holder})")  # fmt: skip

    def engine_ready(said: str) -> None:
        progress.clear_line()
        say("engine", said)

    done = ingest(
        args.paths,
        args.store,
        job=args.job,
        engine=args.engine,
        address=args.ray_address,
        jobs=args.jobs,
        comm_pattern=args.comm_pattern,
        max_event_bytes=args.max_event_mb << 20,
        max_memory_bytes=args.max_memory_mb << 20 if args.max_memory_mb else None,
        on_done=progress.file_done,
        on_wait=waiting,
        on_engine=engine_ready,
        shard=args.shard,
    )
    progress.clear_line()
    for path in done.skipped:
        say("skipped", f"{path}: not a profiler trace")
    for failure in done.failures:
        options.report_failure(failure, args)
    options.say_losses((str(trace), message) for trace, message in done.losses)
    jobs = counted(len(done.jobs), "job")
    print(
        f"{done.store}: {jobs}; {counted(len(done.written), 'rank partition')} written, "
        f"{len(done.unchanged)} unchanged, {len(done.failures)} failed"
    )
    return options.exit_code(done.failures, bool(done.losses))
