"""`traceview ranks PATH...`: clocks aligned across ranks, wait vs transfer per rank, the
straggler, and step-time skew."""

from __future__ import annotations

import argparse

from traceview.cli import options
from traceview.cli.reporters import reporter


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ranks",
        help="across ranks: clock offsets, wait vs transfer, straggler, step skew",
        description="Match collectives across a job's rank traces (group + sequence, or order in "
        "the group), align clocks on their ends, split each rank's collective time into waiting "
        "for the last rank and transfer, name the straggler and show step-time skew.",
    )
    options.add_inputs(p, what="folder of one job's rank traces, a sweep, or a folder of runs")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    runs = options.load(args)
    return options.finish(reporter(args.format).ranks(runs), args, runs)
