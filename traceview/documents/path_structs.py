"""`traceview critical-path`'s document (docs/metrics.md "Critical path"): per job and step, the
chain of work across ranks that set the step's end, and the step's time by rank and category."""

from __future__ import annotations

from typing import Literal

from traceview.analysis.critical_path import Category
from traceview.documents.structs import Document, Error, Struct, Us


class PathPart(Struct, kw_only=True):
    """The path's time on one rank in one category."""

    rank: int
    category: Category
    us: Us
    share: float  # of the step's time (of every step's, in a job's totals)


class PathSegment(Struct, kw_only=True):
    """A stretch of the path on one rank in one category, consecutive work merged."""

    rank: int
    category: Category
    at_us: Us  # from the step's start
    us: Us
    work: int  # kernels, CPU ops or collective calls on it (0: host launch, idle, waiting)
    collective: str | None  # transfer, waiting, unmatched: which collective
    top_work: str | None = None  # the kernel, op or call taking most of it (None for gaps)


class StepPath(Struct, kw_only=True):
    step: int
    start_us: Us  # the first rank's start of the step, on the reference rank's clock
    step_us: Us  # from the first rank's start to the last rank's end: what the parts sum to
    crossings: int  # times the path moved from one rank to another
    parts: list[PathPart]  # largest first
    segments: list[PathSegment]  # in time order


class JobPath(Struct, kw_only=True):
    job: str
    ranks: int  # ranks the path may cross (those traced)
    clock: str  # the clock the times are on
    found: bool  # False: no path (`reason` says why)
    reason: str | None  # why there is none, or which steps were left out
    steps_left_out: int  # not on every rank, or cut short
    totals: list[PathPart]  # over every step's path, largest first
    steps: list[StepPath]
    caveats: list[str]


class CriticalPathDocument(Document, kw_only=True):
    command: Literal["critical-path"] = "critical-path"
    jobs: list[JobPath]
    errors: list[Error]
