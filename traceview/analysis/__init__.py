"""Pure functions from the model to metrics: tables in, tables and records (msgspec structs)
out. No file is read here (traceview/loader does that) and nothing is printed."""

from traceview.analysis.breakdown import Breakdown, breakdown
from traceview.analysis.call_totals import CollectiveSummary, collective_summaries
from traceview.analysis.job import JobReport
from traceview.analysis.rank import RankReport, rank_report
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
    "JobReport",
    "RankReport",
    "StepBreakdown",
    "breakdown",
    "collective_summaries",
    "rank_report",
    "step_breakdowns",
    "total_breakdown",
]
