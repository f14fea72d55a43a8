"""`traceview analyze PATH...`: overlap and exposed communication per rank and step."""

from __future__ import annotations

import argparse

from traceview.cli import inputs, render


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "analyze",
        help="compute vs communication, overlap and exposed communication per rank and step",
        description="Analyse PyTorch profiler traces: a trace file (.json or .json.gz) or a "
        "folder holding one trace per rank of a job.",
    )
    inputs.add_options(p)
    inputs.add_step_filter(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    loaded = inputs.load(args)
    reports = loaded.reports
    if args.format == "json":
        text = render.to_json(reports, loaded.failures, args.steps)
    elif args.format == "csv":
        text = render.to_csv(reports, args.steps)
    else:
        text = render.to_table(reports, args.steps)
    return inputs.finish(text, args, loaded)
