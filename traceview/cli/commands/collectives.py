"""`traceview collectives PATH...`: every collective call, its bucket or module, bandwidth,
exposed part, the backward tail, and an α-β fit with a bucket-size recommendation."""

from __future__ import annotations

import argparse

from traceview.cli import options
from traceview.cli.reporters import reporter


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "collectives",
        help="one row per collective call: bucket/module, queue, bandwidth, exposed; fits",
        description="Per collective call of every rank: DDP bucket (from the run record) or FSDP "
        "module, ready/start/end, bytes, bus bandwidth, the part no compute hides; waits and "
        "transfers across ranks; the backward tail; and an α-β fit of duration against size.",
    )
    options.add_inputs(p)
    options.add_step_filter(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    runs = options.load(args)
    options.check_steps(args.steps, runs.jobs)
    return options.finish(reporter(args.format).collectives(runs, args.steps), args, runs)
