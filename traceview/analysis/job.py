"""One job: its ranks' reports together with its run record, so that collectives can be
labelled (DDP buckets), matched across ranks and fitted."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl

from traceview.analysis.comm_summary import AlphaBetaFit, fit_alpha_beta, label_buckets
from traceview.analysis.cross_rank import CrossRank, StepSkew, align, step_skew
from traceview.analysis.report import RankReport
from traceview.errors import Note
from traceview.parse.run_record import RunRecord, incomplete_run, read_run_record


@dataclass(frozen=True, kw_only=True)
class JobReport:
    folder: Path | None  # None for a single trace given on its own
    ranks: tuple[RankReport, ...]
    run: RunRecord | None
    calls: pl.DataFrame  # every rank's collective calls, + bucket, + wait/transfer when aligned
    cross_rank: CrossRank | None  # None below two ranks; see its `aligned`
    step_skew: tuple[StepSkew, ...]
    fits: tuple[AlphaBetaFit, ...]
    fit_on: str  # "transfer" (after cross-rank alignment) or "duration"


def step_windows(reports: list[RankReport] | tuple[RankReport, ...]) -> pl.DataFrame:
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


def analyze_job(folder: Path | None, reports: list[RankReport]) -> JobReport:
    run = read_run_record(folder) if folder is not None else None
    incomplete = incomplete_run(folder) if folder is not None else None
    if incomplete:  # every rank's result says it belongs to a run that did not finish
        note = Note(message=incomplete, severity="lossy")
        reports = [replace(r, notes=(*r.notes, note)) for r in reports]
    ranked = [r for r in reports if r.rank is not None]
    frames = [r.calls for r in ranked if r.calls.height]
    calls = pl.concat(frames) if frames else (reports[0].calls if reports else pl.DataFrame())
    calls = label_buckets(calls, run.ddp_buckets if run else None) if calls.height else calls
    hosts = {r.host for r in ranked}
    shared_clock = len(hosts) == 1 and None not in hosts
    cross = align(calls, shared_clock) if len(ranked) >= 2 and calls.height else None
    aligned = cross is not None and cross.aligned
    if cross is not None and aligned:
        calls = calls.join(
            cross.calls.select("rank", "index", "match", "wait_ns", "transfer_ns"),
            on=["rank", "index"],
            how="left",
        )
    fit_on = "transfer" if aligned else "duration"
    kinds = calls["collective"].drop_nulls().unique().sort().to_list() if calls.height else []
    fits = tuple(
        fit_alpha_beta(calls, kind, "transfer_ns" if aligned else "dur_ns") for kind in kinds
    )
    return JobReport(
        folder=folder,
        ranks=tuple(reports),
        run=run,
        calls=calls,
        cross_rank=cross,
        step_skew=tuple(step_skew(step_windows(ranked))),
        fits=fits,
        fit_on=fit_on,
    )
