"""`traceview export PATH --output timeline.json.gz`: an annotated timeline for Perfetto."""

from __future__ import annotations

import argparse

from traceview.cli import inputs
from traceview.cli.output import replacing
from traceview.errors import TraceviewError
from traceview.perfetto import write_annotated


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "export",
        help="an annotated timeline for Perfetto: rank lanes plus overlap and exposed tracks",
        description="Write one timeline of a trace or a job folder in the Chrome trace format "
        "(Perfetto, chrome://tracing): each rank's compute, communication and memory lanes on "
        "aligned clocks, with 'overlap' and 'exposed comm' tracks per rank and each collective's "
        "bucket, wait and transfer in its arguments.",
    )
    inputs.add_options(p, what="trace file or folder of one job's rank traces")
    p.set_defaults(run=run, format="table")


def run(args: argparse.Namespace) -> int:
    if not args.output or args.output == "-":
        raise TraceviewError("export needs --output FILE (.json or .json.gz)")
    loaded = inputs.load(args, keep_intervals=True)
    if len(loaded.jobs) != 1:
        raise TraceviewError("export writes one job at a time: give one trace or one folder")
    with replacing(args.output) as sink:
        count = write_annotated(loaded.jobs[0], sink, compress=args.output.endswith(".gz"))
    return inputs.finish(
        f"wrote {count:,} events to {args.output}\n", argparse.Namespace(output=None), loaded
    )
