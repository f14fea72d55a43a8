"""What-if: a data-parallel run's step time at another DP degree, link bandwidth, share of
communication hidden behind compute and bucket size, calibrated on the run itself
(docs/metrics.md "What-if"); the Scaling page's panel and the predictions drawn beside the
measured runs both come from it.

Each collective type t the run's steps hold is sent as k = ⌈S_t ÷ b_t⌉ messages of S_t ÷ k
bytes (S_t: what a rank sends of it per step; b_t: its median message, or for the gradient
collectives — all-reduce, reduce-scatter — the bucket size asked), each costing
α_t + f_t(N) × bytes ÷ busbw_t. f_t is nccl-tests' bus factor at N ranks; α_t the fitted
latency (0 where no fit is trusted); busbw_t the bus bandwidth that sends S_t in the time the
run spent in t per step, all scaled by the bandwidth asked ÷ the dominant type's. The sum is
scaled so that at the run's own values it is the communication the run measured (the union of
its intervals: concurrent calls count once). As much communication stays hidden behind compute
as the run hid (h × its communication, h the share asked, the run's own by default), the rest
is exposed; compute and idle time stay as measured:
T(N) = T_run − exposed_run + max(0, comm(N) − h × comm_run). At the run's own values the
prediction is the measured step."""

from __future__ import annotations

import math
import statistics

import msgspec
import polars as pl

from traceview.analysis.buckets import GRADIENT_COLLECTIVES
from traceview.analysis.calls import bus_factor
from traceview.analysis.job import JobReport
from traceview.analysis.scaling import step_times


class Traffic(msgspec.Struct, frozen=True, kw_only=True):
    """One collective type's messages in a step, as the run measured them."""

    collective: str
    step_bytes: float  # what a rank sends of it per step (median over ranks and steps)
    message_bytes: float  # its median message
    alpha_seconds: float  # per message, from a trusted α-β fit; else 0
    busbw_gbps: float  # what sends step_bytes in its measured time by the model (see _traffic)


class WhatIf(msgspec.Struct, frozen=True, kw_only=True):
    dp: int
    step_seconds: float
    comm_seconds: float  # the step's communication (per rank)
    exposed_seconds: float
    samples_per_s: float | None  # needs the run record's batch
    efficiency: float | None  # T(1) / T(N) against the strategy's DP-1 run, where there is one


class Calibration(msgspec.Struct, frozen=True, kw_only=True):
    """What a run measured, which the what-if starts from."""

    strategy: str
    dp: int
    step_seconds: float  # the run's median step
    comm_seconds: float  # its mean communication per rank and step (union of its intervals)
    exposed_seconds: float
    hidden_share: float  # overlap ÷ communication: how much of it compute can hide
    traffic: tuple[Traffic, ...]  # the step's collectives, the one taking the most time first
    samples_per_rank: float | None  # per step, from the run record
    base_step_seconds: float | None  # the strategy's DP-1 median step

    @property
    def busbw_gbps(self) -> float:
        """The dominant collective's bus bandwidth: where the bandwidth setting starts."""
        return self.traffic[0].busbw_gbps

    @property
    def bucket_bytes(self) -> float | None:
        """The median message of the dominant gradient collective: where the bucket size
        setting starts (None: the steps send no gradients by all-reduce or reduce-scatter)."""
        grads = [t for t in self.traffic if t.collective in GRADIENT_COLLECTIVES]
        return grads[0].message_bytes if grads else None

    @property
    def latency_known(self) -> bool:
        """Whether any α is fitted: without one, the bucket size changes nothing."""
        return any(t.alpha_seconds > 0 for t in self.traffic)

    def simulate(
        self,
        dp: int,
        *,
        busbw_gbps: float | None = None,
        hidden_share: float | None = None,
        bucket_bytes: float | None = None,
    ) -> WhatIf:
        """The step at `dp` ranks; each setting left out stays as the run measured it."""
        hidden = self.hidden_share if hidden_share is None else min(1.0, max(0.0, hidden_share))
        at_run = self._model(self.dp, 1.0, None)
        scale = self.comm_seconds / at_run if at_run > 0 else 0.0
        speed = (busbw_gbps or self.busbw_gbps) / self.busbw_gbps
        comm = scale * self._model(dp, speed, bucket_bytes)
        exposed = max(0.0, comm - hidden * self.comm_seconds)
        step = self.step_seconds - self.exposed_seconds + exposed
        return WhatIf(
            dp=dp,
            step_seconds=step,
            comm_seconds=comm,
            exposed_seconds=exposed,
            samples_per_s=dp * self.samples_per_rank / step if self.samples_per_rank else None,
            efficiency=self.base_step_seconds / step if self.base_step_seconds else None,
        )

    def _model(self, dp: int, speed: float, bucket_bytes: float | None) -> float:
        """Seconds a rank spends per step in collectives, by the α-β model."""
        total = 0.0
        for t in self.traffic:
            factor = bus_factor(t.collective, dp) or 0.0
            message = t.message_bytes
            if bucket_bytes and t.collective in GRADIENT_COLLECTIVES:
                message = bucket_bytes
            if factor == 0 or message <= 0 or t.busbw_gbps <= 0:
                continue
            k = max(1, math.ceil(t.step_bytes / message))
            size = t.step_bytes / k
            total += k * (t.alpha_seconds + factor * size / (t.busbw_gbps * speed * 1e9))
        return total


def calibrate(job: JobReport, base: JobReport | None) -> Calibration | None:
    """The what-if's starting point from a run that communicates (DP ≥ 2, steps with their
    communication measured, collectives with sizes and bus bandwidths); `base`: its strategy's
    DP-1 run, for E(N). None where the run cannot carry one."""
    steps = [s.breakdown for r in job.ranks for s in r.steps]
    times = step_times(job)
    dp = job.run.world_size if job.run else len(job.ranks)
    if not steps or times is None or dp < 2:
        return None
    if any(b.comm_ns is None or b.overlap_ns is None or b.exposed_comm_ns is None for b in steps):
        return None
    calls = job.calls.filter(
        pl.col("bytes").is_not_null() & (pl.col("bytes") > 0) & pl.col("step").is_not_null()
    )
    alphas = {f.collective: f.alpha_us for f in job.fits if f.trusted}
    traffic = _traffic(calls, alphas, dp)
    comm = statistics.fmean(b.comm_ns or 0 for b in steps) / 1e9
    if not traffic or comm <= 0:
        return None
    base_times = step_times(base) if base is not None else None
    batch = job.run.global_batch if job.run else None
    return Calibration(
        strategy=job.strategy_of.name or "unknown",
        dp=dp,
        step_seconds=times.median_s,
        comm_seconds=comm,
        exposed_seconds=statistics.fmean(b.exposed_comm_ns or 0 for b in steps) / 1e9,
        hidden_share=statistics.fmean(b.overlap_ns or 0 for b in steps) / 1e9 / comm,
        traffic=traffic,
        samples_per_rank=batch.samples / dp if batch else None,
        base_step_seconds=base_times.median_s if base_times else None,
    )


def _traffic(calls: pl.DataFrame, alphas: dict[str, float | None], dp: int) -> tuple[Traffic, ...]:
    """Per collective type, per rank and step: its bytes, its time, its median message; the
    bus bandwidth that, by the model, sends those bytes in that time (so each type's modelled
    time at the run's values is what it measured). `alphas`: the trusted α-β fits' latency per
    collective type, µs."""
    per_step = calls.group_by("collective", "rank", "step").agg(
        pl.col("bytes").sum(), pl.col("dur_ns").sum()
    )
    kinds = (
        per_step.group_by("collective")
        .agg(step_bytes=pl.col("bytes").median(), seconds=pl.col("dur_ns").mean() / 1e9)
        .join(calls.group_by("collective").agg(message=pl.col("bytes").median()), on="collective")
        .sort("seconds", descending=True)
    )
    out = []
    for kind, step_bytes, seconds, message in kinds.iter_rows():
        factor = bus_factor(kind, dp) if kind is not None else None
        if not factor or not seconds or not step_bytes:
            continue
        alpha = (alphas.get(kind) or 0.0) / 1e6
        messages = max(1, math.ceil(step_bytes / message))
        sending = seconds - messages * alpha
        if sending <= 0:  # the fitted latency alone exceeds the time measured: no latency kept
            alpha, sending = 0.0, seconds
        out.append(
            Traffic(
                collective=kind,
                step_bytes=float(step_bytes),
                message_bytes=float(message),
                alpha_seconds=alpha,
                busbw_gbps=factor * step_bytes / sending / 1e9,
            )
        )
    return tuple(out)
