"""Pure functions from the model to metrics. No printing here."""

from traceview.analysis.breakdown import Breakdown, breakdown
from traceview.analysis.collective_summary import CollectiveSummary, collective_summaries
from traceview.analysis.report import RankReport, analyze_trace
from traceview.analysis.windows import (
    BeforeFirstStep,
    StepBreakdown,
    step_breakdowns,
    total_breakdown,
)

__all__ = [
    "BeforeFirstStep",
    "Breakdown",
    "CollectiveSummary",
    "RankReport",
    "StepBreakdown",
    "analyze_trace",
    "breakdown",
    "collective_summaries",
    "step_breakdowns",
    "total_breakdown",
]
