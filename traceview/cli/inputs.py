"""What every command that reads traces shares: the options, loading traces in parallel with
progress, skipping non-trace JSON in folders, and reporting errors and losses at the end."""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass

import polars as pl

from traceview.analysis import RankReport
from traceview.analysis.job import JobReport, analyze_job
from traceview.cli.output import write_output
from traceview.cli.progress import Progress
from traceview.errors import EXIT_BAD_INPUT, EXIT_DATA_LOSS, EXIT_OK, TraceviewError
from traceview.inputs import check_one_job, resolve
from traceview.runner import Failure, analyze_many


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


def parse_steps(text: str) -> set[int]:
    steps: set[int] = set()
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise argparse.ArgumentTypeError(f"not a step list: {text!r} (try 3,5-7)")
        lo, hi = int(m[1]), int(m[2] or m[1])
        if hi < lo:
            raise argparse.ArgumentTypeError(f"empty step range: {part.strip()!r}")
        steps.update(range(lo, hi + 1))
    return steps


def check_pattern(text: str) -> str:
    try:
        pl.Series([""], dtype=pl.String).str.contains(text)
    except pl.exceptions.ComputeError as e:
        reason = str(e).strip().splitlines()[-1]
        raise argparse.ArgumentTypeError(f"invalid regular expression {text!r}: {reason}") from None
    return text


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
    progress = Progress(args.progress)
    files = [f for g in groups for f in g.files]
    outcomes = analyze_many(
        files,
        comm_pattern=args.comm_pattern,
        keep_intervals=keep_intervals,
        jobs=args.jobs,
        on_done=progress.file_done if len(files) > 1 else None,
        progress=progress.bytes_read if len(files) == 1 else None,
    )
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
                    print(f"traceview: skipped {o.path}: not a profiler trace", file=sys.stderr)
                else:
                    failures.append(o)
        if g.is_folder:
            check_one_job(g.source, reports)
        if reports:
            jobs.append(analyze_job(g.source if g.is_folder else None, reports))
    if not jobs:
        for failure in failures[:-1]:
            print(f"traceview: error: {failure.message}", file=sys.stderr)
        raise TraceviewError(failures[-1].message)
    return Loaded(jobs, failures)


def finish(text: str, args: argparse.Namespace, loaded: Loaded) -> int:
    """Write the output, then say what failed and what was lost; the exit code follows."""
    write_output(text, args.output)
    for f in loaded.failures:
        print(f"traceview: error: {f.message}", file=sys.stderr)
    for r in loaded.reports:
        for n in r.notes:
            if n.lossy:
                print(f"traceview: warning: {r.trace}: {n.message}", file=sys.stderr)
    if loaded.failures:
        return EXIT_BAD_INPUT
    return EXIT_DATA_LOSS if any(r.lossy for r in loaded.reports) else EXIT_OK
