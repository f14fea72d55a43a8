"""What every command that reads traces shares: its options, loading through the front door
(traceview.load) with progress, and at the end the output, what failed or was lost, and the
exit code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence

import polars as pl

from traceview.cli.output import refuse_inputs, write_output
from traceview.cli.progress import Progress
from traceview.cli.reporters import FORMATS
from traceview.cli.say import say
from traceview.cli.steps import StepSelection, parse_steps
from traceview.errors import (
    A_BUG,
    A_BUG_DEBUG,
    EXIT_BAD_INPUT,
    EXIT_DATA_LOSS,
    EXIT_INTERNAL,
    EXIT_OK,
    TraceviewError,
)
from traceview.inputs import is_stream
from traceview.loader import (
    BYTES_PER_EVENT,
    MAX_EVENT_BYTES,
    NAME_COPIES,
    Failure,
    Job,
    Runs,
    RunSource,
    Shard,
    load_runs,
    machine_memory,
    parsed_shard,
    read_paths,
)
from traceview.plain import number_runs


def add_inputs(
    p: argparse.ArgumentParser,
    *,
    what: str = "trace file, run folder, sweep, trace store, or folder of runs",
    formats: tuple[str, ...] = tuple(FORMATS),
) -> None:
    """The paths and the options for reading them; `--format` where the command has a choice."""
    p.add_argument("paths", nargs="+", metavar="PATH", help=what)
    if formats:
        p.add_argument("--format", choices=formats, default=formats[0])
    p.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")
    p.add_argument(
        "--job",
        metavar="NAME",
        help="only the run of this name (a job in a store, a run folder's name)",
    )
    add_comm_pattern(p)
    p.add_argument(
        "--link-gbps",
        type=positive_float,
        metavar="GB/S",
        help="the peak per direction of the link the collectives ran on, where the traces "
        "cannot tell (across nodes, or a GPU not in traceview's table)",
    )
    p.add_argument("--jobs", "-j", type=int, metavar="N", help="processes to use (default: cores)")
    add_max_event(p)
    add_progress(p)


def add_comm_pattern(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--comm-pattern",
        metavar="REGEX",
        type=check_pattern,
        help="also count kernels (or CPU spans) whose names match as communication",
    )


def add_max_event(p: argparse.ArgumentParser) -> None:
    """The bounds on what one trace may cost: its longest event, and its memory."""
    p.add_argument(
        "--max-event-mb",
        type=positive_int,
        default=MAX_EVENT_BYTES >> 20,
        metavar="MB",
        help=f"longest single event read (default {MAX_EVENT_BYTES >> 20}): a longer stretch "
        "without an event boundary is an error",
    )
    p.add_argument(
        "--max-memory-mb",
        type=positive_int,
        metavar="MB",
        help=f"memory one trace's analysis may take (default: this machine's, "
        f"{machine_memory() >> 20:,} MB here); a trace needing more (~{BYTES_PER_EVENT} bytes "
        f"per event, and {NAME_COPIES} times the bytes of its distinct names) is refused as it "
        "is read",
    )


def add_progress(p: argparse.ArgumentParser) -> None:
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


def check_steps(steps: StepSelection | None, jobs: Sequence[Job], option: str = "--steps") -> None:
    """`option` naming a step a job lacks (a single step it does not have, a range holding
    none of its steps) is bad input: refused, naming the steps it has."""
    if steps is None:
        return
    for job in jobs:
        have = sorted({s.step for r in job.ranks for s in r.steps})
        refuse_lacking(steps.ranges, have, job.name, "step", option, "no profiler steps")


def refuse_lacking(
    ranges: Sequence[tuple[int, int]], have: list[int], name: str, what: str, option: str,
    none: str,
) -> None:  # fmt: skip
    """Ranges (`option`, of `what`s) of which `name` has none (`have`: what it has, sorted;
    `none`: how to say it has none) are refused, naming what it has."""
    lacking = [
        str(lo) if lo == hi else f"{lo}-{hi}"
        for lo, hi in ranges
        if not any(lo <= n <= hi for n in have)
    ]
    if lacking:
        there = f"{what}s {number_runs(have)}" if have else none
        which = what if len(lacking) == 1 and "-" not in lacking[0] else f"{what}s"
        raise TraceviewError(
            f"no {which} {', '.join(lacking)} in {name} ({there}): name {what}s it has, "
            f"e.g. {option} {have[0] if have else 0}"
        )


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= 1 << 20:
        raise argparse.ArgumentTypeError(f"out of range (1 to {1 << 20}): {value}")
    return value


def shard(text: str) -> Shard:
    try:
        return parsed_shard(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < 1e9:
        raise argparse.ArgumentTypeError(f"out of range (above 0, below 1e9): {text!r}")
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


def load(args: argparse.Namespace, *, keep_intervals: bool | int = False) -> Runs:
    """The runs the command's paths name, with progress on stderr; an --output that is one of
    the inputs is refused before any work."""
    if args.jobs is not None and args.jobs < 1:
        raise TraceviewError("--jobs must be at least 1")
    progress = Progress(args.progress)

    def before(sources: list[RunSource]) -> None:
        refuse_inputs(args.output, *read_paths(sources))
        files = [f for s in sources for f in s.files]
        waiting = [f for f in files if is_stream(f)]
        if waiting:  # read here, one by one: said if nothing arrives for a while
            progress.say_if_nothing_arrives(waiting)

    def waiting(holder: str) -> None:
        progress.clear_line()
        say("waiting", f"a writer is moving partitions into the store being read ({holder})")

    runs = load_runs(
        args.paths,
        comm_pattern=args.comm_pattern,
        link_gbps=args.link_gbps,
        keep_intervals=keep_intervals,
        max_event_bytes=args.max_event_mb << 20,
        max_memory_bytes=args.max_memory_mb << 20 if args.max_memory_mb else None,
        jobs=args.jobs,
        job=args.job,
        before=before,
        on_done=progress.file_done,
        progress=progress.bytes_read,
        on_wait=waiting,
    )
    progress.stop_waiting()
    progress.clear_line()
    for path in runs.skipped:
        say("skipped", f"{path}: not a profiler trace")
    if not runs.jobs:
        for failure in runs.failures[:-1]:
            report_failure(failure, args)
        if not runs.failures:
            raise TraceviewError(f"{', '.join(args.paths)}: no traces")
        last = runs.failures[-1]
        if last.internal and getattr(args, "debug", False):
            sys.stderr.write(last.internal)
        message = last.message.replace(A_BUG, A_BUG_DEBUG)
        raise TraceviewError(message, EXIT_INTERNAL if last.internal else EXIT_BAD_INPUT)
    return runs


def finish(text: str, args: argparse.Namespace, runs: Runs, *, wrote_output: bool = False) -> int:
    """Write the output (or, once the command has written its --output file itself, `text` to
    stdout), then say what failed and what was lost; the exit code follows."""
    write_output(text, None if wrote_output else args.output)
    for f in runs.failures:
        report_failure(f, args)
    say_losses((str(r.trace), n.message) for r in runs.reports for n in r.notes if n.lossy)
    return exit_code(runs.failures, any(r.lossy for r in runs.reports))


def say_losses(losses: Iterable[tuple[str, str]]) -> None:
    """One line per loss (trace, what it lost): the same words on many ranks (a job's note)
    name its traces once."""
    by_message: dict[str, list[str]] = {}
    for trace, message in losses:
        by_message.setdefault(message, []).append(trace)
    for message, traces in by_message.items():
        more = f" and {len(traces) - 1:,} more" if len(traces) > 1 else ""
        say("warning", f"{traces[0]}{more}: {message}")


def exit_code(failures: Sequence[Failure], lossy: bool) -> int:
    """A bug above all, then bad input; input lost through no fault of its own (Failure.lost)
    is as a trace cut short: results written, some input missing."""
    if any(f.internal for f in failures):
        return EXIT_INTERNAL
    if any(not f.lost for f in failures):
        return EXIT_BAD_INPUT
    return EXIT_DATA_LOSS if failures or lossy else EXIT_OK


def report_failure(failure: Failure, args: argparse.Namespace) -> None:
    if failure.internal and getattr(args, "debug", False):
        sys.stderr.write(failure.internal)
    say("warning" if failure.lost else "error", failure.message.replace(A_BUG, A_BUG_DEBUG))
