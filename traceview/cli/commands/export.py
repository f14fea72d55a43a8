"""`traceview export PATH [-o timeline.json.gz]`: an annotated timeline for Perfetto."""

from __future__ import annotations

import argparse
import sys

from traceview.cli import options
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
        "bucket, wait and transfer in its arguments. To standard output without --output; "
        "gzip-compressed when the file name ends in .gz.",
    )
    options.add_inputs(p, what="trace file or folder of one job's rank traces", formats=())
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    runs = options.load(args, keep_intervals=True)
    if len(runs.jobs) != 1:
        raise TraceviewError(
            f"export writes one run at a time, and {', '.join(args.paths)} holds "
            f"{len(runs.jobs)}: give one trace or one run folder"
        )
    job = runs.jobs[0]
    if args.output is None or args.output == "-":
        if sys.stdout is None:
            raise TraceviewError("standard output is closed: write to a file with --output FILE")
        sys.stdout.flush()
        write_annotated(job, sys.stdout.buffer, compress=False)
        sys.stdout.buffer.flush()
        return options.finish("", args, runs)
    with replacing(args.output) as sink:
        count = write_annotated(job, sink, compress=args.output.endswith(".gz"))
    return options.finish(
        f"wrote {count:,} events to {args.output}\n", args, runs, wrote_output=True
    )
