"""`traceview diff A B`: two runs compared, communication first — where the step's time went."""

from __future__ import annotations

import argparse

from traceview.cli import options
from traceview.cli.reporters import reporter
from traceview.cli.steps import parse_steps
from traceview.errors import TraceviewError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "diff",
        help="two runs compared: where the step's time went, per part, collective and bucket",
        description="Compare run A with run B (two run folders or traces, or a store's job each "
        "with --job), or one run's steps with its other steps (--steps-a, --steps-b): the "
        "change in step time split into compute, exposed communication and idle; per "
        "collective type and per bucket or FSDP module the calls, bytes, time and exposed time "
        "per rank and step; the kernels whose time changed most. Each change of the step is "
        "judged against the runs' own step-to-step spread (docs/metrics.md, Diff).",
    )
    options.add_inputs(p, what="run A, then run B (a run folder, a trace, or a store)")
    for side in ("a", "b"):
        p.add_argument(
            f"--steps-{side}",
            type=parse_steps,
            metavar="STEPS",
            help=f"only these profiler steps of run {side.upper()}, e.g. 3,5-7; with one run "
            "and both, its steps A against its steps B (before and after a change mid-run)",
        )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    runs = options.load(args)
    if len(runs.jobs) == 1 and runs.failures and not (args.steps_a and args.steps_b):
        # One of the two runs could not be read: its error, not a usage message.
        for failure in runs.failures[:-1]:
            options.report_failure(failure, args)
        raise TraceviewError(runs.failures[-1].message)
    a, b = (runs.jobs[:1], runs.jobs[-1:]) if len(runs.jobs) == 2 else (runs.jobs, runs.jobs)
    options.check_steps(args.steps_a, a, "--steps-a")
    options.check_steps(args.steps_b, b, "--steps-b")
    return options.finish(reporter(args.format).diff(runs, args.steps_a, args.steps_b), args, runs)
