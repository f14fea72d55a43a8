"""`traceview export PATH [-o timeline.json.gz]`: an annotated timeline for Perfetto."""

from __future__ import annotations

import argparse
import sys

from traceview.cli import options
from traceview.cli.output import replacing
from traceview.cli.steps import parse_ranks, parse_steps
from traceview.documents.steps import RankSelection
from traceview.errors import TraceviewError
from traceview.loader import Job
from traceview.perfetto import write_annotated


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "export",
        help="an annotated timeline for Perfetto: rank lanes plus overlap and exposed tracks",
        description="Write one timeline of a trace or a job folder in the Chrome trace format "
        "(Perfetto, chrome://tracing): each rank's compute, communication and memory lanes on "
        "aligned clocks, with 'overlap' and 'exposed comm' tracks per rank and each collective's "
        "bucket, wait and transfer in its arguments. To standard output without --output; "
        "gzip-compressed when the file name ends in .gz. --steps and --ranks write a part of it: "
        "a timeline Perfetto opens (a browser holds about 1 GB of JSON).",
    )
    options.add_inputs(p, what="trace file or folder of one job's rank traces", formats=())
    p.add_argument(
        "--steps",
        metavar="LIST",
        type=parse_steps,
        help="only the work of these profiler steps, e.g. 3,5-7",
    )
    p.add_argument(
        "--ranks",
        metavar="LIST",
        type=parse_ranks,
        help="only these ranks' lanes, e.g. 0,4-7",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    runs = options.load(args, keep_intervals=True)
    if len(runs.jobs) != 1:
        raise TraceviewError(
            f"export writes one run at a time, and {', '.join(args.paths)} holds "
            f"{len(runs.jobs)}: give one trace or one run folder"
        )
    job = runs.jobs[0]
    options.check_steps(args.steps, runs.jobs)
    _check_ranks(args.ranks, job)
    if args.output is None or args.output == "-":
        if sys.stdout is None:
            raise TraceviewError("standard output is closed: write to a file with --output FILE")
        sys.stdout.flush()
        write_annotated(job, sys.stdout.buffer, False, args.steps, args.ranks)
        sys.stdout.buffer.flush()
        return options.finish("", args, runs)
    with replacing(args.output) as sink:
        count = write_annotated(job, sink, args.output.endswith(".gz"), args.steps, args.ranks)
    return options.finish(
        f"wrote {count:,} events to {args.output}\n", args, runs, wrote_output=True
    )


def _check_ranks(ranks: RankSelection | None, job: Job) -> None:
    """--ranks naming a rank the job lacks is bad input: refused, naming the ranks it has."""
    if ranks is not None:
        have = sorted(r.rank for r in job.ranks if r.rank is not None)
        options.refuse_lacking(ranks.ranges, have, job.name, "rank", "--ranks", "no rank numbers")
