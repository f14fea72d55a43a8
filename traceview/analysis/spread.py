"""A job's ranks side by side: per metric the min, median and max over its ranks and the rank
that fares worst — what a many-rank `analyze` leads with, instead of one table per rank."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

import msgspec

from traceview.analysis.breakdown import METRICS, Breakdown
from traceview.analysis.rank import RankReport

# Where less is worse (hidden communication); for every other metric more is worse.
LESS_IS_WORSE = ("overlap", "overlap_pct")


class MetricSpread(msgspec.Struct, frozen=True, kw_only=True):
    metric: str  # one of METRICS (ns), or "overlap_pct"
    ranks: int  # ranks with a value
    min: float | None
    median: float | None
    max: float | None
    worst_rank: int | None  # the rank at the worse end

    @property
    def unit(self) -> str:
        return "%" if self.metric == "overlap_pct" else "ns"


def _value(b: Breakdown, metric: str) -> float | None:
    return b.overlap_pct if metric == "overlap_pct" else b.ns(metric)


def selected(r: RankReport, keep: Callable[[int], bool] | None) -> Breakdown | None:
    """The rank's whole trace, or the sum of the steps `keep` selects (None when none is)."""
    if keep is None:
        return r.total
    chosen = [s.breakdown for s in r.steps if keep(s.step)]
    if not chosen:
        return None

    def total(metric: str) -> int | None:
        values = [b.ns(metric) for b in chosen]
        return None if any(v is None for v in values) else sum(v for v in values if v is not None)

    return Breakdown(
        start_ns=min(b.start_ns for b in chosen),
        end_ns=min(b.start_ns for b in chosen) + (total("window") or 0),
        compute_ns=total("compute") or 0,
        comm_ns=total("comm"),
        overlap_ns=total("overlap"),
        exposed_comm_ns=total("exposed_comm"),
        compute_only_ns=total("compute_only"),
        idle_ns=total("idle"),
    )


def rank_spread(
    reports: Sequence[RankReport], keep: Callable[[int], bool] | None = None
) -> list[MetricSpread]:
    """Per metric over the ranks (whole traces, or the sum of the selected steps); ranks that
    do not say who they are count, and are named by None."""
    rows = [(r.rank, b) for r in reports if (b := selected(r, keep)) is not None]
    out = []
    for metric in (*METRICS, "overlap_pct"):
        known = [(v, rank) for rank, b in rows if (v := _value(b, metric)) is not None]
        if not known:
            out.append(MetricSpread(metric=metric, ranks=0, min=None, median=None, max=None,
                                    worst_rank=None))  # fmt: skip
            continue
        values = [v for v, _ in known]
        pick = min if metric in LESS_IS_WORSE else max
        worst = pick(known, key=lambda k: k[0])
        out.append(
            MetricSpread(
                metric=metric,
                ranks=len(known),
                min=min(values),
                median=statistics.median(values),
                max=max(values),
                worst_rank=worst[1],
            )
        )
    return out
