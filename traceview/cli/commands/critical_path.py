"""`traceview critical-path JOB`: per step, the chain of work across ranks that set its end."""

from __future__ import annotations

import argparse

from traceview.cli import options
from traceview.cli.reporters import reporter


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "critical-path",
        help="per step, the chain of work across ranks that set its end, by rank and category",
        description="Walk each step back from the last rank to finish: through its compute and "
        "collective calls, and at a collective on to the rank that arrived last at it (a "
        "collective ends only after its last rank arrives). The step's time, from the first "
        "rank's start to the last rank's end on the aligned clocks, is attributed to rank and "
        "category (compute, transfer, waiting, unmatched, host launch, idle): the parts sum to "
        "it (docs/metrics.md, Critical path). Reads every rank's intervals; `export` marks the "
        "path on the timeline.",
    )
    options.add_inputs(p, what="folder of one job's rank traces, a sweep, or a store")
    options.add_step_filter(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    runs = options.load(args, keep_intervals=True)  # read once: the walk needs every rank's
    options.check_steps(args.steps, runs.jobs)
    return options.finish(reporter(args.format).critical_path(runs, args.steps), args, runs)
