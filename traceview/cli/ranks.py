"""`traceview ranks FOLDER...`: clocks aligned across ranks, wait vs transfer per rank, the
straggler, and step-time skew."""

from __future__ import annotations

import argparse

from traceview.cli import inputs, render_jobs


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ranks",
        help="across ranks: clock offsets, wait vs transfer, straggler, step skew",
        description="Match collectives across a job's rank traces (group + sequence, or order in "
        "the group), align clocks on their ends, split each rank's collective time into waiting "
        "for the last rank and transfer, name the straggler and show step-time skew.",
    )
    inputs.add_options(p, what="folder of one job's rank traces")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    loaded = inputs.load(args)
    if args.format == "json":
        text = render_jobs.ranks_json(loaded.jobs)
    elif args.format == "csv":
        text = render_jobs.ranks_csv(loaded.jobs)
    else:
        text = render_jobs.ranks_table(loaded.jobs)
    return inputs.finish(text, args, loaded)
