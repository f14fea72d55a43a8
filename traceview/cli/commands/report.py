"""`traceview report PATH... --output report.html`: the dashboard's charts in one HTML file."""

from __future__ import annotations

import argparse

from traceview.cli import options
from traceview.cli.output import replacing
from traceview.errors import TraceviewError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report",
        help="the dashboard's charts as one static HTML file",
        description="Write the dashboard's charts for runs (as for `compare`) into one "
        "self-contained HTML file: scaling, overlap per step, collectives and memory, with "
        "every caveat.",
    )
    options.add_inputs(p, what="run folder, sweep folder, or folder of runs", formats=())
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not args.output or args.output == "-":
        raise TraceviewError("report needs --output FILE.html")
    try:
        import vl_convert  # noqa: F401 -- altair needs it to inline its scripts in the file

        from traceview.report.page import TIMELINE_RANKS, report_html
    except ImportError as e:
        raise TraceviewError(
            f"report needs the dashboard's charting ({e.name}): pip install 'traceview[dashboard]'"
        ) from None
    runs = options.load(args, keep_intervals=TIMELINE_RANKS)  # one step's timeline per run
    with replacing(args.output) as sink:
        sink.write(report_html(runs).encode("utf-8"))
    return options.finish(f"wrote {args.output}\n", args, runs, wrote_output=True)
