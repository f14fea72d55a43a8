"""`traceview diff A B`: two runs compared, communication first — where the step's time went."""

from __future__ import annotations

import argparse

from traceview.cli import options
from traceview.cli.reporters import reporter
from traceview.cli.say import say
from traceview.cli.steps import parse_steps
from traceview.documents import structs as d
from traceview.documents.diff import diff, slower
from traceview.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_SLOWER, TraceviewError


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
    p.add_argument(
        "--fail-if-slower",
        type=_percent,
        metavar="PCT",
        help="exit 4 when run B's step is slower than run A's by more than PCT %% beyond the "
        "runs' noise (the change less twice its standard error, over steps); 0 otherwise: a "
        "gate for CI",
    )
    p.set_defaults(run=run)


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r} (e.g. 5)") from None
    if not 0 <= value < 1e6:
        raise argparse.ArgumentTypeError(f"{text}: a percentage from 0 up")
    return value


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
    code = options.finish(reporter(args.format).diff(runs, args.steps_a, args.steps_b), args, runs)
    if args.fail_if_slower is None or code in (EXIT_BAD_INPUT, EXIT_INTERNAL):
        return code
    return _gate(diff(runs, args.steps_a, args.steps_b), args.fail_if_slower) or code


def _gate(doc: d.DiffDocument, pct: float) -> int | None:
    """EXIT_SLOWER where B's step is slower than A's by more than `pct` % beyond the noise,
    said on stderr either way."""
    step = doc.step_ms
    verdict = slower(doc, pct)
    if verdict is None:
        say("gate", f"not judged: {_why_not(doc)}; not failing")
        return None
    said = (
        f"B's step {step.after:,.3f} ms against A's {step.before:,.3f} ms: "
        f"{step.change:+,.3f} ms ({step.change_pct or 0:+.1f}%), noise ±{step.noise:,.3f} ms"
    )
    if verdict:
        say("slower", f"{said}: slower by more than {pct:g}% beyond the noise (exit 4)")
        return EXIT_SLOWER
    say("gate", f"{said}: not slower by more than {pct:g}% beyond the noise")
    return None


def _why_not(doc: d.DiffDocument) -> str:
    if not doc.step_ms.before:
        return "run A has no profiler steps with their communication measured"
    a, b = doc.steps
    return f"fewer than two profiler steps on a side (A {a}, B {b}): no spread to judge by"
