"""`traceview collectives PATH...`: every collective call, its bucket or module, bandwidth,
exposed part, the backward tail, and an α-β fit with a bucket-size recommendation."""

from __future__ import annotations

import argparse

from traceview.cli import options
from traceview.cli.reporters import as_csv, as_json, as_table


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
    if args.format == "json":
        text = as_json.collectives(runs.jobs, args.steps)
    elif args.format == "csv":
        text = as_csv.collectives(runs.jobs, args.steps)
    else:
        text = as_table.collectives(runs.jobs, args.steps)
    return options.finish(text, args, runs)
