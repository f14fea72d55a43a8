"""`traceview pack STORE`: each job's rank partitions into its pack, a handful of files that
every command reads at once (docs/store.md, "Packed jobs"). `ingest` and the profiler handler
pack a job of many ranks themselves; this packs any job."""

from __future__ import annotations

import argparse

from traceview.loader.packing import pack_store
from traceview.plain import counted


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "pack",
        help="pack each job of a store into a few files (ingest packs jobs of many ranks)",
        description="Move each job's rank partitions into its pack: one Parquet file per table "
        "and one summaries file, which every command reads at once. The numbers read are the "
        "same; only the files change.",
    )
    p.add_argument("store", metavar="STORE", help="the trace store")
    p.add_argument("--job", metavar="NAME", help="only this job (default: every job)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    root, packed = pack_store(args.store, args.job)
    for name, ranks in packed.items():
        print(f"{root}: job {name}: " + (f"{counted(ranks, 'rank')} in its pack"
                                          if ranks else "nothing to pack"))  # fmt: skip
    return 0
