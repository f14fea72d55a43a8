"""traceview: where does data-parallel training step time go, and how much communication is
hidden behind compute? Parse PyTorch profiler traces and measure it per rank, step and bucket.

    import traceview
    job = traceview.load("runs/ddp-dp2")       # a trace, or a folder of one job's rank traces
    job.ranks[0].total.exposed_comm_ns         # each rank's Breakdown, in ns; .steps per step
    job.calls                                  # every collective call (JOB_CALLS_SCHEMA)
    runs = traceview.load_runs(["sweep/"])     # many runs: runs.scaling(), runs.predictions()
    traceview.ingest(["runs/"], "store")       # into a Parquet store, which loads as traces do
"""

from traceview import preload  # noqa: F401  # first: it sets up native libraries before they load
from traceview.algebra import IntervalSet, union
from traceview.analysis import (
    JOB_CALLS_SCHEMA,
    BeforeFirstStep,
    Breakdown,
    CollectiveSummary,
    RankReport,
    StepBreakdown,
)
from traceview.analysis.cross_rank import CrossRank, RankAlignment, StepSkew
from traceview.analysis.findings import NO_FINDINGS
from traceview.analysis.fits import AlphaBetaFit
from traceview.analysis.job import BANDWIDTH_ON_DURATION, LOWER_BOUND
from traceview.analysis.prediction import Prediction
from traceview.analysis.scaling import COMM_PER_STEP, ScalingRow
from traceview.analysis.spans import overlap_spans
from traceview.analysis.theory import layout_bytes, model_state_bytes, run_precision
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
from traceview.model import INTERVALS_SCHEMA, Timeline, build_timeline
from traceview.parse import Trace, TraceMeta, read_trace
from traceview.parse.run_record import RunRecord
from traceview.strategies import STATE_CATEGORIES, STRATEGIES, Precision, Strategy
from traceview.version import __version__

__all__ = [
    "BANDWIDTH_ON_DURATION",
    "COMM_PER_STEP",
    "INTERVALS_SCHEMA",
    "JOB_CALLS_SCHEMA",
    "LOWER_BOUND",
    "NO_FINDINGS",
    "STATE_CATEGORIES",
    "STRATEGIES",
    "AlphaBetaFit",
    "BeforeFirstStep",
    "Breakdown",
    "CollectiveSummary",
    "CrossRank",
    "Failure",
    "Ingested",
    "IntervalSet",
    "Job",
    "Note",
    "Precision",
    "Prediction",
    "RankAlignment",
    "RankReport",
    "RunRecord",
    "RunSource",
    "RunSummary",
    "Runs",
    "ScalingRow",
    "StepBreakdown",
    "StepSkew",
    "Strategy",
    "Timeline",
    "Trace",
    "TraceMeta",
    "TraceviewError",
    "__version__",
    "analyze_trace",
    "build_timeline",
    "find_runs",
    "ingest",
    "layout_bytes",
    "load",
    "load_runs",
    "model_state_bytes",
    "overlap_spans",
    "read_trace",
    "run_precision",
    "summarize",
    "union",
]
