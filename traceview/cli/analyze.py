"""`traceview analyze PATH...`: overlap and exposed communication per rank and step."""

from __future__ import annotations

import argparse
import re
import sys

import polars as pl

from traceview.analysis import RankReport
from traceview.cli import render
from traceview.cli.output import write_output
from traceview.cli.progress import Progress
from traceview.errors import EXIT_BAD_INPUT, EXIT_DATA_LOSS, EXIT_OK, TraceviewError
from traceview.inputs import check_one_job, resolve
from traceview.runner import Failure, analyze_many


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "analyze",
        help="compute vs communication, overlap and exposed communication per rank and step",
        description="Analyse PyTorch profiler traces: a trace file (.json or .json.gz) or a "
        "folder holding one trace per rank of a job.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="trace file or folder of rank traces")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    p.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")
    p.add_argument(
        "--steps",
        metavar="LIST",
        type=parse_steps,
        help="only these profiler steps, e.g. 3,5-7 (totals still cover the whole trace)",
    )
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
    p.set_defaults(run=run)


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


def run(args: argparse.Namespace) -> int:
    if args.jobs is not None and args.jobs < 1:
        raise TraceviewError("--jobs must be at least 1")
    groups = resolve(args.paths)
    progress = Progress(args.progress)
    files = [f for g in groups for f in g.files]
    outcomes = analyze_many(
        files,
        comm_pattern=args.comm_pattern,
        jobs=args.jobs,
        on_done=progress.file_done if len(files) > 1 else None,
        progress=progress.bytes_read if len(files) == 1 else None,
    )
    if len(files) == 1 and progress.enabled:
        sys.stderr.write("\r" + " " * 50 + "\r")
    reports = [o for o in outcomes if isinstance(o, RankReport)]
    in_folders = {f for g in groups if g.is_folder for f in g.files}
    skipped = [
        o for o in outcomes if isinstance(o, Failure) and o.not_a_trace and o.path in in_folders
    ]
    failures = [o for o in outcomes if isinstance(o, Failure) and o not in skipped]
    for s in skipped:
        print(f"traceview: skipped {s.path}: not a profiler trace", file=sys.stderr)
    for g in groups:
        if g.is_folder:
            check_one_job(g.source, [r for r in reports if r.trace in g.files])
    if not reports:
        for f in failures[:-1]:
            print(f"traceview: error: {f.message}", file=sys.stderr)
        raise TraceviewError(failures[-1].message)
    if args.format == "json":
        text = render.to_json(reports, failures, args.steps)
    elif args.format == "csv":
        text = render.to_csv(reports, args.steps)
    else:
        text = render.to_table(reports, args.steps)
    write_output(text, args.output)
    for f in failures:
        print(f"traceview: error: {f.message}", file=sys.stderr)
    for r in reports:
        for n in r.notes:
            if n.lossy:
                print(f"traceview: warning: {r.trace}: {n.message}", file=sys.stderr)
    if failures:
        return EXIT_BAD_INPUT
    return EXIT_DATA_LOSS if any(r.lossy for r in reports) else EXIT_OK
