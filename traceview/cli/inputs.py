"""What every command that reads traces shares: the options, loading traces in parallel with
progress, skipping non-trace JSON in folders, and reporting errors and losses at the end."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import polars as pl

from traceview.analysis import RankReport
from traceview.analysis.job import JobReport, analyze_job
from traceview.cli.output import refuse_inputs, write_output
from traceview.cli.progress import Progress
from traceview.cli.say import say
from traceview.cli.steps import parse_steps
from traceview.errors import (
    EXIT_BAD_INPUT,
    EXIT_DATA_LOSS,
    EXIT_INTERNAL,
    EXIT_OK,
    TraceviewError,
)
from traceview.inputs import NOT_TRACES, check_one_job, resolve
from traceview.parse.source import is_stream
from traceview.parse.stream import MAX_EVENT_BYTES
from traceview.runner import Failure, Options, analyze_many


def add_options(
    p: argparse.ArgumentParser, *, what: str = "trace file or folder of rank traces"
) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help=what)
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    p.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")
    p.add_argument(
        "--comm-pattern",
        metavar="REGEX",
        type=check_pattern,
        help="also count kernels (or CPU spans) whose names match as communication",
    )
    p.add_argument("--jobs", "-j", type=int, metavar="N", help="processes to use (default: cores)")
    p.add_argument(
        "--max-event-mb",
        type=positive_int,
        default=MAX_EVENT_BYTES >> 20,
        metavar="MB",
        help=f"longest single event read (default {MAX_EVENT_BYTES >> 20}): a longer stretch "
        "without an event boundary is an error",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show progress on stderr (default: when it is a terminal)",
    )


def add_step_filter(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--steps",
        metavar="LIST",
        type=parse_steps,
        help="only these profiler steps, e.g. 3,5-7 (totals still cover the whole trace)",
    )


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= 1 << 20:
        raise argparse.ArgumentTypeError(f"out of range (1 to {1 << 20}): {value}")
    return value


def check_pattern(text: str) -> str:
    try:
        pl.Series([""], dtype=pl.String).str.contains(text)
    except pl.exceptions.PolarsError as e:
        raise argparse.ArgumentTypeError(
            f"invalid regular expression {text!r}: {_regex_reason(str(e))}"
        ) from None
    return text


def _regex_reason(message: str) -> str:
    """The regex engine's own reason, out of polars' several-line message."""
    lines = [line.strip() for line in message.split("This error occurred")[0].splitlines()]
    said = [line.removeprefix("error: ") for line in lines if line.startswith("error: ")]
    if said:
        return said[-1]
    first = lines[0] if lines else message
    return first.removeprefix("regex error: ").rstrip(".") or "not a valid pattern"


@dataclass
class Loaded:
    jobs: list[JobReport]  # one per PATH that yielded any trace
    failures: list[Failure]

    @property
    def reports(self) -> list[RankReport]:
        return [r for job in self.jobs for r in job.ranks]


def load(args: argparse.Namespace, *, keep_intervals: bool = False) -> Loaded:
    if args.jobs is not None and args.jobs < 1:
        raise TraceviewError("--jobs must be at least 1")
    groups = resolve(args.paths)
    files = [f for g in groups for f in g.files]
    records = [g.source / name for g in groups if g.is_folder for name in NOT_TRACES]
    refuse_inputs(args.output, [*files, *records])
    progress = Progress(args.progress)
    streams = [f for f in files if is_stream(f)]
    if streams:  # read in this process, one by one: say so if nothing arrives for a while
        progress.say_if_nothing_arrives(streams)
    options = Options(
        comm_pattern=args.comm_pattern,
        keep_intervals=keep_intervals,
        max_event_bytes=args.max_event_mb << 20,
    )
    outcomes = analyze_many(
        files,
        options=options,
        jobs=args.jobs,
        on_done=progress.file_done if len(files) > 1 else None,
        progress=progress.bytes_read if len(files) == 1 or streams else None,
    )
    progress.stop_waiting()
    if len(files) == 1 and progress.enabled:
        sys.stderr.write("\r" + " " * 50 + "\r")
    by_path = dict(zip(files, outcomes, strict=True))
    failures: list[Failure] = []
    jobs = []
    for g in groups:
        reports = [o for f in g.files if isinstance(o := by_path[f], RankReport)]
        for path in g.files:
            o = by_path[path]
            if isinstance(o, Failure):
                if o.not_a_trace and g.is_folder:
                    say("skipped", f"{o.path}: not a profiler trace")
                else:
                    failures.append(o)
        if g.is_folder:
            check_one_job(g.source, reports)
        if reports:
            jobs.append(analyze_job(g.source if g.is_folder else None, reports))
    if not jobs:
        for failure in failures[:-1]:
            _report(failure, args)
        last = failures[-1]
        if last.internal and getattr(args, "debug", False):
            sys.stderr.write(last.internal)
        raise TraceviewError(last.message, EXIT_INTERNAL if last.internal else EXIT_BAD_INPUT)
    return Loaded(jobs, failures)


def finish(text: str, args: argparse.Namespace, loaded: Loaded) -> int:
    """Write the output, then say what failed and what was lost; the exit code follows."""
    write_output(text, args.output)
    for f in loaded.failures:
        _report(f, args)
    # One line per loss: the same words on many ranks (a job's note) name its traces once.
    losses: dict[str, list[str]] = {}
    for r in loaded.reports:
        for n in r.notes:
            if n.lossy:
                losses.setdefault(n.message, []).append(str(r.trace))
    for message, traces in losses.items():
        more = f" and {len(traces) - 1:,} more" if len(traces) > 1 else ""
        say("warning", f"{traces[0]}{more}: {message}")
    if any(f.internal for f in loaded.failures):
        return EXIT_INTERNAL
    if loaded.failures:
        return EXIT_BAD_INPUT
    return EXIT_DATA_LOSS if any(r.lossy for r in loaded.reports) else EXIT_OK


def _report(failure: Failure, args: argparse.Namespace) -> None:
    if failure.internal and getattr(args, "debug", False):
        sys.stderr.write(failure.internal)
    say("error", failure.message)
