"""The words every output format shares with the library's own messages, said once there."""

from __future__ import annotations

from pathlib import Path

from traceview.analysis.findings import NO_FINDINGS
from traceview.analysis.job import BANDWIDTH_ON_DURATION, LOWER_BOUND
from traceview.analysis.prediction import CheckedPrediction
from traceview.analysis.scaling import COMM_PER_STEP
from traceview.analysis.strategy_of import StrategyOf
from traceview.documents import structs as d
from traceview.plain import GLOSSARY, counted
from traceview.store import layout

__all__ = [
    "BANDWIDTH_ON_DURATION",
    "COMM_PER_STEP",
    "LOWER_BOUND",
    "NO_FINDINGS",
    "SCALING_LEGEND",
    "job_said",
    "overlap_tax_said",
    "stragglers_said",
    "strategy_said",
]

# The scaling table's columns in a few lines, under compare's table, the report's summary and
# the dashboard's; the rules behind each are in docs/metrics.md "Compare", the words in the
# glossary.
SCALING_LEGEND = (
    ("step s", "the run's median step time in seconds (its fastest–slowest step)"),
    ("E(N)", "scaling efficiency: throughput at N ranks ÷ (N × throughput of the DP-1 run)"),
    ("exposed comm", "the share of the step in which communication ran with no compute"),
    (
        "traffic, buffers",
        "per rank and step, in parameters (Ψ): elements sent on the wire, "
        "elements the calls carry; the textbook figure in brackets",
    ),
    (
        "model states",
        "the largest rank's parameters, gradients and optimizer state; the "
        "textbook ZeRO figure in brackets, and 'as run' where the implementation differs",
    ),
    ("! and *", "a caveat, said below; a strategy inferred from the traces"),
    ("more", f'rules: docs/metrics.md "Compare"; words: {GLOSSARY}'),
)


def job_said(name: str, whole: bool = True) -> str:
    """A job's name as text outputs say it: a stored job by its name and store ('my-run in
    store S'), not by its folder ('S/job=my-run'); `whole=False`: the last part alone (a
    sweep's 'ddp-dp2', a store's 'my-run')."""
    path = Path(name)
    if not path.name.startswith(layout.JOB_PREFIX):
        return name if whole else path.name
    short = path.name.removeprefix(layout.JOB_PREFIX)
    return f"{short} in store {path.parent}" if whole else short


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


def overlap_tax_said(t: d.OverlapTaxJson) -> str:
    """A rank's overlap tax in a sentence, its evidence and caveat with it (docs/metrics.md
    "Overlap tax")."""
    if not t.pairs or t.slowdown is None:
        return f"overlap tax: {t.caveat}"
    q1, q2, q3 = t.slowdown
    alone = f"{t.alone[1]:.2f}× ({t.alone[0]:.2f}–{t.alone[2]:.2f}×)" if t.alone else "not known"
    cost = (
        f"; counting it, communication costs {t.comm_cost_us / 1e3:,.3f} ms over "
        f"{counted(t.steps, 'step')}, not the exposed {(t.comm_cost_us - t.tax_us) / 1e3:,.3f} ms"
        if t.comm_cost_us is not None
        else ""
    )
    said = (
        f"overlap tax: {t.tax_us / 1e3:+,.3f} ms ({t.tax_per_step_us / 1e3:+,.3f} ms a step): "
        f"compute beside communication ran {q2:.2f}× its time alone (middle half "
        f"{q1:.2f}–{q3:.2f}×; alone runs {alone}), over {t.pairs:,} launches of "
        f"{t.kernels:,} kernels, {t.coverage_pct or 0:.0f}% of the compute beside communication"
        f"{cost}"
    )
    return f"{said} (caveat: {t.caveat})" if t.caveat else said
