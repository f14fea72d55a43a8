"""`traceview collectives PATH...`: every collective call, its bucket or module, bandwidth,
exposed part, the backward tail, and an α-β fit with a bucket-size recommendation."""

from __future__ import annotations

import argparse

from traceview.cli import inputs, render_jobs


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "collectives",
        help="one row per collective call: bucket/module, queue, bandwidth, exposed; fits",
        description="Per collective call of every rank: DDP bucket (from the run record) or FSDP "
        "module, ready/start/end, bytes, bus bandwidth, the part no compute hides; waits and "
        "transfers across ranks; the backward tail; and an α-β fit of duration against size.",
    )
    inputs.add_options(p)
    inputs.add_step_filter(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    loaded = inputs.load(args)
    if args.format == "json":
        text = render_jobs.collectives_json(loaded.jobs, args.steps)
    elif args.format == "csv":
        text = render_jobs.collectives_csv(loaded.jobs, args.steps)
    else:
        text = render_jobs.collectives_table(loaded.jobs, args.steps)
    return inputs.finish(text, args, loaded)
