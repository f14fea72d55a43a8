"""One job: its ranks' reports with its run record, and what they give together — each call
labelled with its DDP bucket or FSDP module, matched across ranks, split into wait and
transfer, and fitted. Pure: the loader (traceview/loader) reads the files. Each job-level figure
is computed when first asked for, so a command that prints per-rank tables pays for none."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

import msgspec
import polars as pl

from traceview.analysis.buckets import label_buckets, label_repeated_buckets
from traceview.analysis.calls import bus_factors
from traceview.analysis.cross_rank import CrossRank, StepSkew, align, step_skew
from traceview.analysis.desync import Desync, desync
from traceview.analysis.fits import AlphaBetaFit, fit_alpha_beta
from traceview.analysis.links import Link, link_of
from traceview.analysis.rank import RankReport
from traceview.analysis.stragglers import Recurrence, recurrence
from traceview.analysis.strategy_of import StrategyOf, infer_strategy
from traceview.parse.run_record import RunRecord
from traceview.strategies import strategy
from traceview.tables import CALLS_SCHEMA, JOB_CALLS_SCHEMA

# How every output marks and explains a bandwidth over a call's whole duration.
LOWER_BOUND = "≥"
BANDWIDTH_ON_DURATION = (
    "a lower bound: over the call's whole duration, which includes waiting for the last rank "
    "to arrive (no transfer time: the ranks are not aligned, or the call was not matched)"
)


class JobReport(msgspec.Struct, frozen=True, kw_only=True, dict=True):
    folder: Path | None  # None for a single trace given on its own
    ranks: tuple[RankReport, ...]
    run: RunRecord | None
    link_gbps: float | None = None  # the link's peak per direction, given (--link-gbps)

    @cached_property
    def link(self) -> tuple[Link | None, str]:
        """The link the job's collectives ran on, and why none where it is not known
        (analysis/links.py)."""
        devices = {d for r in self.ranks for d in r.devices}
        hosts = {self.host_of(r) for r in self.ranks}
        return link_of(devices, hosts, self.link_gbps)

    def host_of(self, report: RankReport) -> str | None:
        """The host a rank ran on: as its trace says, else as the run record says (where the
        trace records none)."""
        if report.host is not None or self.run is None or report.rank is None:
            return report.host
        return next((r.host for r in self.run.ranks if r.rank == report.rank), None)

    @cached_property
    def _ranked_calls(self) -> pl.DataFrame:
        frames = [r.calls for r in self.ranks if r.rank is not None and r.calls.height]
        # (one chunk: each rank's frame a chunk of its own slows every later query)
        return pl.concat(frames, rechunk=True) if frames else pl.DataFrame(schema=CALLS_SCHEMA)

    @cached_property
    def strategy_of(self) -> StrategyOf:
        """From the run record, else what the traces say of their run, else inferred from
        what they show (analysis/strategy_of.py)."""
        if self.run is not None:
            return StrategyOf(name=self.run.strategy, source="run record")
        said = {r.run.strategy for r in self.ranks if r.run is not None}
        if len(said) == 1:
            return StrategyOf(name=said.pop(), source="trace metadata")
        return infer_strategy(self.ranks, self._ranked_calls)

    @cached_property
    def _labelled(self) -> pl.DataFrame:
        """Every ranked call, with its bucket and label."""
        calls = self._ranked_calls
        spec = strategy(self.strategy_of.name)
        if self.run is not None and self.run.ddp_buckets:
            calls = label_buckets(calls, self.run.ddp_buckets)
        elif spec is not None and spec.ddp_buckets:
            calls = label_repeated_buckets(calls)
        else:
            calls = calls.with_columns(bucket=pl.lit(None, pl.Int64))
        return calls.with_columns(
            label=pl.coalesce(pl.format("bucket {}", pl.col("bucket")), pl.col("module"))
        )

    @cached_property
    def cross_rank(self) -> CrossRank | None:
        """None below two ranks; see its `aligned`."""
        ranked = [r for r in self.ranks if r.rank is not None]
        calls = self._labelled
        if len(ranked) < 2 or calls.height == 0:
            return None
        return align(calls, shared_clock=self.shared_clock)

    @property
    def shared_clock(self) -> bool:
        """Every ranked trace says it ran on one and the same host: their clocks are one."""
        hosts = {self.host_of(r) for r in self.ranks if r.rank is not None}
        return len(hosts) == 1 and None not in hosts

    @property
    def aligned(self) -> bool:
        return self.cross_rank is not None and self.cross_rank.aligned

    @cached_property
    def calls(self) -> pl.DataFrame:
        """JOB_CALLS_SCHEMA: every rank's collective calls, labelled, with wait and transfer
        where the ranks are aligned."""
        calls = self._labelled
        if self.aligned:
            assert self.cross_rank is not None
            split = self.cross_rank.calls.select("rank", "index", "match", "wait_ns", "transfer_ns")
            calls = on_transfer(calls.join(split, on=["rank", "index"], how="left"))
        missing = [c for c in JOB_CALLS_SCHEMA if c not in calls.columns]
        calls = calls.with_columns(pl.lit(None).alias(c) for c in missing)
        calls = calls.with_columns(bandwidth_on=pl.col("bandwidth_on").fill_null("duration"))
        return calls.select(list(JOB_CALLS_SCHEMA)).cast(JOB_CALLS_SCHEMA)  # type: ignore[arg-type]

    @property
    def fit_on(self) -> str:
        """What the α-β fits regress: "transfer" times once the ranks are aligned (waiting for
        a late rank is not transfer), else whole "duration"s."""
        return "transfer" if self.aligned else "duration"

    @cached_property
    def fits(self) -> tuple[AlphaBetaFit, ...]:
        calls = self.calls
        duration = "transfer_ns" if self.aligned else "dur_ns"
        kinds = calls["collective"].drop_nulls().unique().sort().to_list()
        in_steps = calls.filter(pl.col("step").is_not_null())
        windows = sum(s.breakdown.window_ns for r in self.ranks for s in r.steps)
        if not windows:  # no profiler steps: the whole traces
            in_steps = calls
            windows = sum(r.total.window_ns for r in self.ranks if r.total is not None)
        per_step = (
            in_steps.filter(pl.col("bytes").is_not_null())
            .group_by("collective", "rank", "step")
            .agg(pl.col("bytes").sum())
            .group_by("collective")
            .agg(pl.col("bytes").median())
        )
        step_bytes = dict(per_step.iter_rows())
        busy = dict(in_steps.group_by("collective").agg(pl.col("dur_ns").sum()).iter_rows())
        return tuple(
            fit_alpha_beta(
                calls,
                kind,
                duration,
                on=self.fit_on,
                step_bytes=step_bytes.get(kind),
                step_share=busy.get(kind, 0) / windows if windows else None,
            )
            for kind in kinds
        )

    @cached_property
    def step_skew(self) -> tuple[StepSkew, ...]:
        return tuple(step_skew(step_windows(self.ranks)))

    @cached_property
    def desync(self) -> Desync | None:
        """Desync and hang signs across the ranks' collective calls; None below two ranks."""
        cross = self.cross_rank
        if cross is not None and cross.aligned:
            offsets: dict[int, float] | None = {a.rank: a.offset_ns for a in cross.ranks}
        else:
            offsets = {} if self.shared_clock else None
        ends = {
            r.rank: r.total.end_ns for r in self.ranks if r.rank is not None and r.total is not None
        }
        steps = {
            r.rank: {s.step for s in r.steps if not s.partial}
            for r in self.ranks
            if r.rank is not None
        }
        return desync(self._labelled, steps, ends, offsets)

    @cached_property
    def recurrence(self) -> Recurrence | None:
        """Per step, the rank the others waited for, and whether it recurs; None unless the
        ranks are aligned."""
        if not self.aligned:
            return None
        assert self.cross_rank is not None
        return recurrence(self.cross_rank.calls, len(self.cross_rank.ranks))


def on_transfer(calls: pl.DataFrame) -> pl.DataFrame:
    """algbw and busbw of the calls with a transfer time, over that time."""
    transfer = pl.col("transfer_ns")
    timed = transfer.is_not_null() & (transfer > 0)
    algbw = pl.col("bytes") / transfer
    return calls.with_columns(
        algbw_gbps=pl.when(timed).then(algbw).otherwise(pl.col("algbw_gbps")),
        busbw_gbps=pl.when(timed).then(algbw * bus_factors(calls)).otherwise(pl.col("busbw_gbps")),
        bandwidth_on=pl.when(timed).then(pl.lit("transfer")),
    )


def step_windows(reports: tuple[RankReport, ...]) -> pl.DataFrame:
    rows = [
        (r.rank, s.step, s.breakdown.start_ns, s.breakdown.end_ns)
        for r in reports
        if r.rank is not None
        for s in r.steps
    ]
    return pl.DataFrame(
        rows,
        schema={"rank": pl.Int32, "step": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64},
        orient="row",
    )
