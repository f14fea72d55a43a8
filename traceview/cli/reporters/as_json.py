"""The JSON documents (README "Output"): one envelope — traceview_version, schema_version,
command — around each command's payload."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from traceview.analysis import Breakdown, RankReport
from traceview.analysis.breakdown import METRICS
from traceview.analysis.cross_rank import RankAlignment
from traceview.analysis.exposure import exposure_by_step
from traceview.analysis.fits import AlphaBetaFit
from traceview.analysis.spread import rank_spread
from traceview.cli.reporters.common import call_rows, envelope, finding, job_head, us
from traceview.cli.steps import StepSelection
from traceview.loader import Job, Runs


def _dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2) + "\n"


def breakdown(b: Breakdown) -> dict[str, Any]:
    out: dict[str, Any] = {f"{m}_us": us(b.ns(m)) for m in METRICS}
    out["overlap_pct"] = b.overlap_pct
    return out


# -- analyze -------------------------------------------------------------------------------


def analyze(runs: Runs, steps: StepSelection | None, per_rank: bool = False) -> str:
    return _dump(
        envelope(
            "analyze",
            ranks=[_rank(r, steps) for r in runs.reports],
            jobs=[_spread(job, steps) for job in runs.jobs],
            findings=[finding(f) for f in runs.findings()],
            errors=_errors(runs),
        )
    )


def _errors(runs: Runs) -> list[dict[str, Any]]:
    """What could not be read: `lost` when through no fault of the input (a killed worker, a
    sweep's point that did not finish)."""
    return [{"path": str(f.path), "message": f.message, "lost": f.lost} for f in runs.failures]


def _spread(job: Job, steps: StepSelection | None) -> dict[str, Any]:
    """The job's ranks side by side: per metric min, median, max (µs; overlap in %) and the
    rank at the worse end."""
    spread = {}
    for s in rank_spread(job.ranks, None if steps is None else steps.__contains__):
        key = "overlap_pct" if s.metric == "overlap_pct" else f"{s.metric}_us"
        per = 1 if s.metric == "overlap_pct" else 1000  # ns -> µs, exactly
        spread[key] = {
            **{k: None if v is None else v / per for k, v in
               (("min", s.min), ("median", s.median), ("max", s.max))},
            "worst_rank": s.worst_rank,
        }  # fmt: skip
    return {"job": job.name, "ranks": len(job.ranks), "spread": spread}


def _rank(r: RankReport, steps: StepSelection | None) -> dict[str, Any]:
    before = r.before_first_step
    first = []
    if before is not None and steps is None:
        head = {
            "step": None,
            "before_first_step": True,
            "kernels": before.kernels,
            "memcpy": before.memcpy,
            "memset": before.memset,
        }
        first.append(head | breakdown(before.breakdown))
    return {
        "trace": str(r.trace),
        "rank": r.rank,
        "world_size": r.world_size,
        "backend": r.backend,
        "mode": r.mode,
        "size_bytes": r.size_bytes,
        "truncated": r.truncated,
        "notes": [{"severity": n.severity, "message": n.message} for n in r.notes],
        "total": breakdown(r.total) if r.total else None,
        "steps": first
        + [
            {"step": s.step, "before_first_step": False, "partial": s.partial}
            | breakdown(s.breakdown)
            for s in r.steps
            if steps is None or s.step in steps
        ],
        "collectives": [
            {
                "collective": c.collective,
                "count": c.count,
                "total_us": us(c.total_ns),
                "bytes": c.bytes,
                "bytes_known": c.bytes_known,
            }
            for c in r.collectives
        ],
    }


# -- collectives ---------------------------------------------------------------------------


def collectives(runs: Runs, steps: StepSelection | None) -> str:
    return _dump(envelope("collectives", jobs=[_calls(job, steps) for job in runs.jobs]))


def _calls(job: Job, steps: StepSelection | None) -> dict[str, Any]:
    run = job.run
    buckets = {str(b.index): b.params for b in run.ddp_buckets} if run and run.ddp_buckets else {}
    chosen = job.calls if steps is None else job.calls.filter(steps.expr("step"))
    cross = job.cross_rank
    return {
        **job_head(job),
        "calls": call_rows(job, steps).to_dicts(),
        "exposed_by_step": [
            {
                "rank": e.rank,
                "step": e.step,
                "exposed_us": us(e.exposed_ns),
                "calls": [
                    {
                        "index": c.index,
                        "collective": c.collective,
                        "label": c.label,
                        "exposed_us": us(c.exposed_ns),
                    }
                    for c in e.calls
                ],
            }
            for e in exposure_by_step(chosen)
        ],
        "bucket_params": buckets,
        "backward_tails": [
            {"rank": r.rank, "step": t.step, "tail_us": us(t.tail_ns)}
            for r in job.ranks
            for t in r.backward_tails
            if steps is None or t.step in steps
        ],
        "aligned": cross is not None and cross.aligned,
        "not_aligned_reason": cross.reason if cross is not None and not cross.aligned else None,
        "fits_on": job.fit_on,
        "fits": [_fit(f) for f in job.fits],
    }


def _fit(fit: AlphaBetaFit) -> dict[str, Any]:
    return {
        "collective": fit.collective,
        "calls": fit.calls,
        "distinct_sizes": fit.distinct_sizes,
        "size_clusters": fit.size_clusters,
        "alpha_us": fit.alpha_us,
        "bandwidth_gbps": fit.bandwidth_gbps,
        "r2": None if fit.r2 is None else float(fit.r2),
        "confidence": fit.confidence,
        "why": fit.why,
        "size_for_90pct_bytes": fit.size_for_90pct_bytes,
        "median_bytes": fit.median_bytes,
        "step_bytes": fit.step_bytes,
        "step_share": fit.step_share,
        "one_bucket": fit.one_bucket,
        "advice": fit.advice,
    }


# -- ranks ---------------------------------------------------------------------------------


def alignment(a: RankAlignment) -> dict[str, Any]:
    return {
        "rank": a.rank,
        "clock_offset_us": a.offset_ns / 1000,
        "residual_us": a.residual_ns / 1000,
        "wait_us": a.wait_ns / 1000,
        "transfer_us": a.transfer_ns / 1000,
        "last_arrivals": a.last_arrivals,
    }


def ranks(runs: Runs) -> str:
    return _dump(envelope("ranks", jobs=[_across(job) for job in runs.jobs]))


def _across(job: Job) -> dict[str, Any]:
    cross = job.cross_rank
    return {
        **job_head(job),
        "ranks": len(job.ranks),
        "aligned": cross is not None and cross.aligned,
        "reason": cross.reason if cross else None,
        "matched_by": cross.matched_by if cross else None,
        "reference_rank": cross.reference_rank if cross else None,
        "matched_collectives": cross.matched if cross else 0,
        "rejected_matches": cross.rejected if cross else 0,
        "unmatched_calls": cross.unmatched if cross else 0,
        "straggler": cross.straggler if cross else None,
        "per_rank": [alignment(a) for a in (cross.ranks if cross else ())],
        "step_skew": [
            {
                "step": s.step,
                "shortest_us": us(s.shortest_ns),
                "longest_us": us(s.longest_ns),
                "skew_us": us(s.skew_ns),
                "slowest_rank": s.slowest_rank,
            }
            for s in job.step_skew
        ],
    }


# -- compare -------------------------------------------------------------------------------


def compare(runs: Runs, memory_budget_bytes: float | None = None) -> str:
    return _dump(
        envelope(
            "compare",
            runs=[asdict(r) for r in runs.scaling()],
            findings=[finding(f) for f in runs.findings(memory_budget_bytes)],
            errors=_errors(runs),
        )
    )
