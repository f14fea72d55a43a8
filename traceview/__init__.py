"""traceview: where does data-parallel training step time go, and how much communication is
hidden behind compute? Parse PyTorch profiler traces and measure it per rank, step and bucket.

    import traceview
    job = traceview.load("runs/ddp-dp2")       # a trace, or a folder of one job's rank traces
    job.ranks[0].total.exposed_comm_ns         # each rank's Breakdown, in ns; .steps per step
    job.calls                                  # every collective call (JOB_CALLS_SCHEMA)
    job.critical_path().attribution()          # step time by (rank, category) on the path
    runs = traceview.load_runs(["sweep/"])     # many runs: runs.scaling(), runs.predictions()
    traceview.ingest(["runs/"], "store")       # into a Parquet store, which loads as traces do

Importing the package loads nothing and changes no setting: each name below is imported when it
is first used, so a training process importing `traceview.profiler` pays only for what it uses,
and the `traceview` program configures the native libraries (traceview/preload.py) before any
of them loads.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from traceview.algebra import IntervalSet, union
    from traceview.analysis import (
        BeforeFirstStep,
        Breakdown,
        CollectiveSummary,
        RankReport,
        StepBreakdown,
    )
    from traceview.analysis.critical_path import CriticalPath
    from traceview.analysis.cross_rank import CrossRank, RankAlignment, StepSkew
    from traceview.analysis.desync import Desync, DesyncSign
    from traceview.analysis.findings import NO_FINDINGS
    from traceview.analysis.fits import AlphaBetaFit
    from traceview.analysis.job import BANDWIDTH_ON_DURATION, LOWER_BOUND
    from traceview.analysis.prediction import CheckedPrediction, Prediction, Withheld
    from traceview.analysis.scaling import COMM_PER_STEP, ScalingRow
    from traceview.analysis.spans import overlap_spans
    from traceview.analysis.stragglers import Recurrence, StepStraggler
    from traceview.analysis.theory import layout_bytes, model_state_bytes, run_precision
    from traceview.analysis.whatif import Calibration, WhatIf
    from traceview.errors import Note, TraceviewError
    from traceview.loader import (
        Failure,
        Job,
        Runs,
        RunSource,
        RunSummary,
        analyze_trace,
        find_runs,
        load,
        load_runs,
        summarize,
    )
    from traceview.loader.ingest import Ingested, ingest
    from traceview.model import Timeline, build_timeline
    from traceview.parse import Trace, TraceMeta, read_trace
    from traceview.parse.run_record import RunRecord
    from traceview.strategies import STATE_CATEGORIES, STRATEGIES, Precision, Strategy
    from traceview.tables import INTERVALS_SCHEMA, JOB_CALLS_SCHEMA
    from traceview.version import __version__

# The public names and the module each comes from (tests/test_package.py checks this against the
# imports above, which are what type checkers read).
_EXPORTS: dict[str, str] = {
    "AlphaBetaFit": "traceview.analysis.fits",
    "BANDWIDTH_ON_DURATION": "traceview.analysis.job",
    "BeforeFirstStep": "traceview.analysis",
    "Breakdown": "traceview.analysis",
    "COMM_PER_STEP": "traceview.analysis.scaling",
    "Calibration": "traceview.analysis.whatif",
    "CheckedPrediction": "traceview.analysis.prediction",
    "CollectiveSummary": "traceview.analysis",
    "CriticalPath": "traceview.analysis.critical_path",
    "CrossRank": "traceview.analysis.cross_rank",
    "Desync": "traceview.analysis.desync",
    "DesyncSign": "traceview.analysis.desync",
    "Failure": "traceview.loader",
    "INTERVALS_SCHEMA": "traceview.tables",
    "Ingested": "traceview.loader.ingest",
    "IntervalSet": "traceview.algebra",
    "JOB_CALLS_SCHEMA": "traceview.tables",
    "Job": "traceview.loader",
    "LOWER_BOUND": "traceview.analysis.job",
    "NO_FINDINGS": "traceview.analysis.findings",
    "Note": "traceview.errors",
    "Precision": "traceview.strategies",
    "Prediction": "traceview.analysis.prediction",
    "RankAlignment": "traceview.analysis.cross_rank",
    "RankReport": "traceview.analysis",
    "Recurrence": "traceview.analysis.stragglers",
    "RunRecord": "traceview.parse.run_record",
    "RunSource": "traceview.loader",
    "RunSummary": "traceview.loader",
    "Runs": "traceview.loader",
    "STATE_CATEGORIES": "traceview.strategies",
    "STRATEGIES": "traceview.strategies",
    "ScalingRow": "traceview.analysis.scaling",
    "StepBreakdown": "traceview.analysis",
    "StepSkew": "traceview.analysis.cross_rank",
    "StepStraggler": "traceview.analysis.stragglers",
    "Strategy": "traceview.strategies",
    "Timeline": "traceview.model",
    "Trace": "traceview.parse",
    "TraceMeta": "traceview.parse",
    "TraceviewError": "traceview.errors",
    "WhatIf": "traceview.analysis.whatif",
    "Withheld": "traceview.analysis.prediction",
    "__version__": "traceview.version",
    "analyze_trace": "traceview.loader",
    "build_timeline": "traceview.model",
    "find_runs": "traceview.loader",
    "ingest": "traceview.loader.ingest",
    "layout_bytes": "traceview.analysis.theory",
    "load": "traceview.loader",
    "load_runs": "traceview.loader",
    "model_state_bytes": "traceview.analysis.theory",
    "overlap_spans": "traceview.analysis.spans",
    "read_trace": "traceview.parse",
    "run_precision": "traceview.analysis.theory",
    "summarize": "traceview.loader",
    "union": "traceview.algebra",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'traceview' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
