"""The words every output format shares with the library's own messages, said once there."""

from __future__ import annotations

from traceview.analysis.findings import NO_FINDINGS
from traceview.analysis.job import BANDWIDTH_ON_DURATION, LOWER_BOUND
from traceview.analysis.prediction import CheckedPrediction
from traceview.analysis.scaling import COMM_PER_STEP
from traceview.analysis.strategy_of import StrategyOf
from traceview.documents import structs as d

__all__ = [
    "BANDWIDTH_ON_DURATION",
    "COMM_PER_STEP",
    "LOWER_BOUND",
    "NO_FINDINGS",
    "stragglers_said",
    "strategy_said",
]


def strategy_said(strategy: str | None, source: str) -> str:
    """ "zero3", "zero3 (inferred)" or "unknown", as every output says it."""
    return StrategyOf(name=strategy, source=source).said  # type: ignore[arg-type]


def stragglers_said(s: d.Stragglers) -> str:
    """The stragglers-by-step verdict in one sentence (docs/metrics.md "Stragglers")."""
    head = f"{s.steps_with_a_straggler} of {len(s.per_step)} steps had a straggler"
    if s.verdict == "one rank":
        return (
            f"{head}; rank {s.rank} in {s.steps_waited_for} of them, the same rank step after "
            f"step (by chance {s.chance:.1g})"
        )
    if s.verdict == "rotating":
        return f"{head}; {s.ranks_waited_for} ranks in turn, none in more than {s.steps_waited_for}"
    if s.verdict == "undecided":
        most = f"rank {s.rank}" if s.rank is not None else "two or more ranks tied"
        return (
            f"{head}; the most, {most}, in {s.steps_waited_for}: too few steps to tell a "
            "recurring rank from chance"
        )
    return f"{head}: too few to tell whether one rank recurs"


def prediction_checked_said(c: CheckedPrediction) -> str:
    """One checked prediction in a line (docs/metrics.md "Predictions checked")."""
    return (
        f"{c.strategy} DP {c.dp}, predicted from DP {c.from_dp} and DP 1: step "
        f"{c.predicted_step_seconds * 1e3:,.3f} ms (E(N) {c.predicted_efficiency:.2f}); measured "
        f"{c.measured_step_seconds * 1e3:,.3f} ms (E(N) {c.measured_efficiency:.2f}): "
        f"error {c.error_pct:+.0f}%"
    )


def link_said(name: str | None, peak_gbps: float | None, scope: str | None, basis: str | None,
              why: str | None) -> str:  # fmt: skip
    """The link a job's collectives are held against, or why none is known."""
    if name is None or peak_gbps is None:
        return f"against the link's peak: not known: {why}"
    return (
        f"against the link's peak: {name}, {peak_gbps:,.0f} GB/s per direction, {scope} ({basis})"
    )
