"""`traceview analyze PATH...`: overlap and exposed communication per rank and step."""

from __future__ import annotations

import argparse

from traceview.cli import options
from traceview.cli.reporters import reporter


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "analyze",
        help="compute vs communication, overlap and exposed communication per rank and step",
        description="Analyse PyTorch profiler traces: a trace file (.json or .json.gz), a "
        "folder holding one trace per rank of a job, a sweep, or a folder of such folders.",
    )
    options.add_inputs(p)
    options.add_step_filter(p)
    p.add_argument(
        "--per-rank",
        action="store_true",
        help="each rank's table of steps too (a job of several ranks leads with its ranks side "
        "by side: min, median, max and the worst rank per metric)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    runs = options.load(args)
    options.check_steps(args.steps, runs.jobs)
    text = reporter(args.format).analyze(runs, args.steps, args.per_rank)
    return options.finish(text, args, runs)
