"""The words every output format shares with the library's own messages, said once there."""

from __future__ import annotations

from traceview.analysis.findings import NO_FINDINGS
from traceview.analysis.job import BANDWIDTH_ON_DURATION, LOWER_BOUND
from traceview.analysis.scaling import COMM_PER_STEP
from traceview.analysis.strategy_of import StrategyOf

__all__ = ["BANDWIDTH_ON_DURATION", "COMM_PER_STEP", "LOWER_BOUND", "NO_FINDINGS", "strategy_said"]


def strategy_said(strategy: str | None, source: str) -> str:
    """ "zero3", "zero3 (inferred)" or "unknown", as every output says it."""
    return StrategyOf(name=strategy, source=source).said  # type: ignore[arg-type]
