"""traceview: where does data-parallel training step time go, and how much communication is
hidden behind compute? Parse PyTorch profiler traces and measure it per rank, step and bucket."""

__version__ = "0.1.0"

from traceview.analysis import (
    Breakdown,
    CollectiveSummary,
    RankReport,
    StepBreakdown,
    analyze_trace,
)
from traceview.errors import Note, TraceviewError
from traceview.model import Timeline, build_timeline
from traceview.parse import Trace, TraceMeta, read_trace

__all__ = [
    "Breakdown",
    "CollectiveSummary",
    "Note",
    "RankReport",
    "StepBreakdown",
    "Timeline",
    "Trace",
    "TraceMeta",
    "TraceviewError",
    "__version__",
    "analyze_trace",
    "build_timeline",
    "read_trace",
]
