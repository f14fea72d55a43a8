"""`traceview compare PATH...`: efficiency against DP degree, per strategy."""

from __future__ import annotations

import argparse

from traceview.cli import options
from traceview.cli.reporters import reporter


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare",
        help="across runs: throughput, efficiency vs DP degree, exposed comm, volume, memory",
        description="Compare runs (folders with run.json and rank traces, a sweep folder with "
        "index.json, folders of foreign rank traces, or a folder of any of these): per "
        "strategy and DP degree, throughput, weak-scaling efficiency E(N), "
        "exposed-communication fraction, communication volume per step and model-state "
        "memory, beside the ZeRO theory.",
    )
    options.add_inputs(p, what="run folder, sweep folder, or folder of runs")
    p.add_argument(
        "--memory-budget-gb",
        type=options.positive_float,
        metavar="GB",
        help="GiB per rank for model states: finds the least sharding that fits",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    runs = options.load(args)
    budget = None if args.memory_budget_gb is None else args.memory_budget_gb * 2**30
    return options.finish(reporter(args.format).compare(runs, budget), args, runs)
