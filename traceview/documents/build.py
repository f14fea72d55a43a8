"""Each command's document, built from loaded runs: the numbers every output format shows, in
the units they show them (µs, bytes, GB/s), as plain Python numbers."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import msgspec
import polars as pl

from traceview.analysis import Breakdown, RankReport
from traceview.analysis.cross_rank import RankAlignment
from traceview.analysis.desync import Desync
from traceview.analysis.exposure import exposure_by_step
from traceview.analysis.finding import Finding
from traceview.analysis.fits import AlphaBetaFit
from traceview.analysis.links import against_peak
from traceview.analysis.spread import rank_spread
from traceview.analysis.stragglers import Recurrence
from traceview.documents import structs as d
from traceview.documents.steps import StepSelection
from traceview.loader import Job, Runs
from traceview.version import __version__

# The call table's columns as documents carry them (times in µs).
CALL_COLUMNS = list(d.Call.__struct_fields__)
_CALL_TIMES = ("ready", "start", "end", "queue", "wait", "transfer", "exposed", "exposed_share")


def envelope() -> dict[str, Any]:
    return {"traceview_version": __version__, "schema_version": d.SCHEMA_VERSION}


def us(ns: float | None) -> float | None:
    return None if ns is None else float(ns) / 1000.0


def _keep(steps: StepSelection | None) -> Callable[[int], bool] | None:
    return None if steps is None else steps.__contains__


def breakdown(b: Breakdown) -> d.BreakdownJson:
    """A window's figures as documents carry them: those of a step row (_step_row)."""
    row = _step_row(b, None, before_first_step=False, partial=False)
    return d.BreakdownJson(**{f: getattr(row, f) for f in d.BreakdownJson.__struct_fields__})


def _step_row(
    b: Breakdown,
    step: int | None,
    *,
    before_first_step: bool,
    partial: bool,
    kernels: int | None = None,
    memcpy: int | None = None,
    memset: int | None = None,
) -> d.StepRow:
    """One row of a rank's steps, its figures in µs. Each field named, not gathered in a dict: a
    CPU trace can have 200,000 steps, and a dict a row was two thirds of making them."""
    return d.StepRow(
        step=step,
        before_first_step=before_first_step,
        partial=partial,
        kernels=kernels,
        memcpy=memcpy,
        memset=memset,
        window_us=b.window_ns / 1000.0,
        compute_us=b.compute_ns / 1000.0,
        comm_us=us(b.comm_ns),
        overlap_us=us(b.overlap_ns),
        exposed_comm_us=us(b.exposed_comm_ns),
        compute_only_us=us(b.compute_only_ns),
        idle_us=us(b.idle_ns),
        overlap_pct=None if (pct := b.overlap_pct) is None else float(pct),
    )


def errors(runs: Runs) -> list[d.Error]:
    return [d.Error(path=str(f.path), message=f.message, lost=f.lost) for f in runs.failures]


def finding(f: Finding) -> d.FindingJson:
    return d.FindingJson(rule=f.rule, job=f.job, what=f.what, action=f.action, numbers=f.numbers)


# -- analyze -------------------------------------------------------------------------------


def analyze(runs: Runs, steps: StepSelection | None = None) -> d.AnalyzeDocument:
    return d.AnalyzeDocument(
        **envelope(),
        ranks=[rank(r, job.name, steps) for job in runs.jobs for r in job.ranks],
        jobs=[spread(job, steps) for job in runs.jobs],
        findings=[finding(f) for f in runs.findings()],
        errors=errors(runs),
    )


def step_rows(r: RankReport, steps: StepSelection | None) -> list[d.StepRow]:
    """Before the first step (when every step is shown), then each step chosen."""
    rows = []
    before = r.before_first_step
    if before is not None and steps is None:
        rows.append(
            _step_row(
                before.breakdown,
                None,
                before_first_step=True,
                partial=False,
                kernels=before.kernels,
                memcpy=before.memcpy,
                memset=before.memset,
            )
        )
    taxed = {t.step: t.tax_ns for t in r.overlap_tax.by_step} if r.overlap_tax else {}
    for s in r.steps:
        if steps is None or s.step in steps:
            row = _step_row(s.breakdown, s.step, before_first_step=False, partial=s.partial)
            if s.step in taxed:
                row.overlap_tax_us = taxed[s.step] / 1000.0
            rows.append(row)
    return rows


def overlap_tax(r: RankReport) -> d.OverlapTaxJson | None:
    """The rank's overlap tax over its steps with work, beside the exposed communication."""
    t = r.overlap_tax
    if t is None:
        return None
    worked = [s.breakdown for s in r.steps if s.holds_work]
    exposed = [b.exposed_comm_ns for b in worked]
    coverage = t.coverage
    return d.OverlapTaxJson(
        tax_us=t.tax_ns / 1000.0,
        steps=len(worked),
        tax_per_step_us=t.tax_ns / 1000.0 / max(len(worked), 1),
        comm_cost_us=(
            None if None in exposed else (sum(e or 0 for e in exposed) + t.tax_ns) / 1000.0
        ),
        pairs=t.pairs,
        kernels=t.kernels,
        beside_us=t.beside_ns / 1000.0,
        paired_us=t.paired_ns / 1000.0,
        coverage_pct=None if coverage is None else 100.0 * coverage,
        slowdown=None if t.slowdown is None else list(t.slowdown),
        alone=None if t.alone is None else list(t.alone),
        beyond_noise=t.beyond_noise,
        caveat=t.caveat,
    )


def rank(r: RankReport, job_name: str, steps: StepSelection | None) -> d.Rank:
    return d.Rank(
        trace=str(r.trace),
        job=job_name,
        rank=r.rank,
        world_size=r.world_size,
        backend=r.backend,
        mode=r.mode,  # type: ignore[arg-type]
        size_bytes=r.size_bytes,
        truncated=r.truncated,
        notes=[d.NoteJson(severity=n.severity, message=n.message) for n in r.notes],
        total=breakdown(r.total) if r.total else None,
        steps=step_rows(r, steps),
        collectives=[
            d.CollectiveTotal(
                collective=c.collective,
                count=c.count,
                total_us=float(c.total_ns) / 1000,
                bytes=c.bytes,
                bytes_known=c.bytes_known,
            )
            for c in r.collectives
        ],
        overlap_tax=overlap_tax(r),
    )


def spread(job: Job, steps: StepSelection | None) -> d.JobSpread:
    """The job's ranks side by side: per metric min, median, max (µs; overlap in %) and the
    rank at the worse end."""
    out = {}
    for s in rank_spread(job.ranks, _keep(steps)):
        key, per = ("overlap_pct", 1.0) if s.metric == "overlap_pct" else (f"{s.metric}_us", 1e3)
        value = {k: None if v is None else float(v) / per
                 for k, v in (("min", s.min), ("median", s.median), ("max", s.max))}  # fmt: skip
        out[key] = d.Spread(**value, worst_rank=s.worst_rank)
    keep = _keep(steps)
    taxed = [
        (sum(t.tax_ns for t in r.overlap_tax.by_step if keep is None or keep(t.step)), r.rank)
        for r in job.ranks
        if r.overlap_tax is not None and r.overlap_tax.pairs
    ]
    if taxed:
        values = sorted(v / 1e3 for v, _ in taxed)
        out["overlap_tax_us"] = d.Spread(
            min=values[0],
            median=statistics.median(values),
            max=values[-1],
            worst_rank=max(taxed, key=lambda t: t[0])[1],
        )
    return d.JobSpread(job=job.name, ranks=len(job.ranks), spread=out)


# -- collectives ---------------------------------------------------------------------------


def collectives(runs: Runs, steps: StepSelection | None = None) -> d.CollectivesDocument:
    return d.CollectivesDocument(**envelope(), jobs=[job_calls(job, steps) for job in runs.jobs])


def job_head(job: Job) -> dict[str, Any]:
    return {
        "job": job.name,
        "folder": None if job.folder is None else str(job.folder),
        "traces": [str(r.trace) for r in job.ranks],
        "strategy": job.strategy,
        "strategy_source": job.strategy_of.source,
        "strategy_evidence": job.strategy_of.evidence or None,
    }


def _chosen_calls(job: Job, steps: StepSelection | None) -> pl.DataFrame:
    return job.calls if steps is None else job.calls.filter(steps.expr("step"))


def call_table(calls: pl.DataFrame, link_gbps: float | None = None) -> pl.DataFrame:
    """A job's calls (JOB_CALLS_SCHEMA) in the documents' columns: times in µs; each call's
    bus bandwidth against the link's peak where it is known."""
    return calls.with_columns(
        duration_us=pl.col("dur_ns") / 1000,
        **{f"{c}_us": pl.col(f"{c}_ns") / 1000 for c in _CALL_TIMES},
        link_peak_pct=100 * pl.col("busbw_gbps") / link_gbps
        if link_gbps
        else pl.lit(None, pl.Float64),
    ).select(CALL_COLUMNS)


def _peak(job: Job) -> float | None:
    link, _ = job.report.link
    return link.gbps if link else None


def job_call_table(job: Job, steps: StepSelection | None) -> pl.DataFrame:
    """The collectives document's calls as a table (what `job_calls` holds as records), for
    what lays them out as a table (the dashboard), without a record per call."""
    return call_table(_chosen_calls(job, steps), _peak(job))


def job_calls(job: Job, steps: StepSelection | None) -> d.JobCalls:
    run = job.run
    buckets = {str(b.index): b.params for b in run.ddp_buckets} if run and run.ddp_buckets else {}
    chosen = _chosen_calls(job, steps)
    cross = job.cross_rank
    return d.JobCalls(
        **job_head(job),
        calls=msgspec.convert(call_table(chosen, _peak(job)).to_dicts(), list[d.Call]),
        exposed_by_step=[
            d.ExposedStep(
                rank=e.rank,
                step=e.step,
                exposed_us=float(e.exposed_ns) / 1000,
                calls=[
                    d.ExposedCallJson(
                        index=c.index,
                        collective=c.collective,
                        label=c.label,
                        name=c.name,
                        exposed_us=float(c.exposed_ns) / 1000,
                    )
                    for c in e.calls
                ],
            )
            for e in exposure_by_step(chosen)
        ],
        bucket_params=buckets,
        backward_tails=[
            d.BackwardTailJson(rank=r.rank, step=t.step, tail_us=float(t.tail_ns) / 1000)
            for r in job.ranks
            for t in r.backward_tails
            if steps is None or t.step in steps
        ],
        aligned=cross is not None and cross.aligned,
        not_aligned_reason=cross.reason if cross is not None and not cross.aligned else None,
        fits_on=job.fit_on,  # type: ignore[arg-type]
        fits=[fit(f) for f in job.fits],
        **_link(job, chosen),
    )


def _link(job: Job, calls: pl.DataFrame) -> dict[str, Any]:
    link, why = job.report.link
    if link is None:
        return {"no_link_reason": why}
    rows = against_peak(calls, link)
    return {
        "link": d.LinkJson(name=link.name, peak_gbps=link.gbps, scope=link.scope, basis=link.basis),
        "against_peak": msgspec.convert(rows.to_dicts(), list[d.AgainstPeak]),
    }


def fit(f: AlphaBetaFit) -> d.Fit:
    return d.Fit(
        collective=f.collective,
        calls=f.calls,
        distinct_sizes=f.distinct_sizes,
        size_clusters=f.size_clusters,
        alpha_us=_float(f.alpha_us),
        bandwidth_gbps=_float(f.bandwidth_gbps),
        r2=_float(f.r2),
        confidence=f.confidence,  # type: ignore[arg-type]
        why=f.why,
        size_for_90pct_bytes=_float(f.size_for_90pct_bytes),
        median_bytes=_float(f.median_bytes),
        step_bytes=_float(f.step_bytes),
        step_share=_float(f.step_share),
        one_bucket=f.one_bucket,
        advice=f.advice,
    )


def _float(x: float | None) -> float | None:
    return None if x is None else float(x)


# -- ranks ---------------------------------------------------------------------------------


def alignment(a: RankAlignment, host: str | None) -> d.Alignment:
    return d.Alignment(
        rank=a.rank,
        host=host,
        clock_offset_us=float(a.offset_ns) / 1000,
        residual_us=float(a.residual_ns) / 1000,
        wait_us=float(a.wait_ns) / 1000,
        transfer_us=float(a.transfer_ns) / 1000,
        last_arrivals=a.last_arrivals,
        caused_wait_us=a.caused_wait_ns / 1000,
    )


def ranks(runs: Runs) -> d.RanksDocument:
    return d.RanksDocument(**envelope(), jobs=[job_ranks(job) for job in runs.jobs])


def job_ranks(job: Job) -> d.JobRanks:
    cross = job.cross_rank
    hosts = {r.rank: job.report.host_of(r) for r in job.ranks}
    return d.JobRanks(
        **job_head(job),
        ranks=len(job.ranks),
        compared=cross is not None,
        aligned=cross is not None and cross.aligned,
        reason=cross.reason if cross else None,
        matched_by=cross.matched_by if cross else None,
        reference_rank=cross.reference_rank if cross else None,
        matched_collectives=cross.matched if cross else 0,
        rejected_matches=cross.rejected if cross else 0,
        unmatched_calls=cross.unmatched if cross else 0,
        straggler=cross.straggler if cross else None,
        per_rank=[alignment(a, hosts.get(a.rank)) for a in (cross.ranks if cross else ())],
        step_skew=[
            d.StepSkewJson(
                step=s.step,
                shortest_us=float(s.shortest_ns) / 1000,
                longest_us=float(s.longest_ns) / 1000,
                skew_us=float(s.skew_ns) / 1000,
                slowest_rank=s.slowest_rank,
            )
            for s in job.step_skew
        ],
        stragglers=stragglers(job.stragglers),
        desync=desync(job.desync),
    )


def desync(found: Desync | None) -> d.DesyncJson | None:
    if found is None:
        return None
    return d.DesyncJson(
        groups=found.groups,
        calls=found.calls,
        keyed_by=found.keyed_by,
        signs=[
            d.DesyncSignJson(
                kind=s.kind,
                pg=s.pg,
                rank=s.rank,
                others=list(s.others),
                seq=s.seq,
                collective=s.collective,
                bytes=s.bytes,
                step=s.step,
                others_dur_us=None if s.others_dur_ns is None else s.others_dur_ns / 1000,
                said=s.said,
                trace_goes_on=s.trace_goes_on,
            )
            for s in found.signs
        ],
        unjudged=list(found.unjudged),
    )


def stragglers(rec: Recurrence | None) -> d.Stragglers | None:
    if rec is None:
        return None
    return d.Stragglers(
        verdict=rec.verdict,
        rank=rec.rank,
        steps_waited_for=rec.count,
        steps_with_a_straggler=rec.judged,
        ranks_waited_for=rec.distinct,
        chance=rec.chance,
        per_step=[
            d.StepStragglerJson(
                step=s.step,
                collectives=s.collectives,
                wait_share=s.wait_share,
                rank=s.rank,
                last_at=s.last_at,
                caused_us=s.caused_ns / 1000,
            )
            for s in rec.steps
        ],
    )


# -- compare -------------------------------------------------------------------------------


def compare(runs: Runs, memory_budget_bytes: float | None = None) -> d.CompareDocument:
    return d.CompareDocument(
        **envelope(),
        runs=list(runs.scaling()),
        findings=[finding(f) for f in runs.findings(memory_budget_bytes)],
        errors=errors(runs),
        predictions_checked=runs.checked_predictions(),
    )
