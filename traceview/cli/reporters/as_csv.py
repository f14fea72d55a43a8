"""CSV: one row per rank and step (analyze), per call (collectives), per rank of a job (ranks),
per run (compare); empty cells for unknown values."""

from __future__ import annotations

import csv
import io
from typing import Any

import msgspec
import polars as pl
import polars.selectors as cs

from traceview.cli.reporters.common import BREAKDOWN, caveats, rank_rows
from traceview.documents import StepSelection, build
from traceview.documents import structs as d
from traceview.documents.critical_path import critical_path as path_document
from traceview.documents.diff import diff as diff_document
from traceview.documents.frames import frame
from traceview.loader import Runs

ANALYZE_COLUMNS = ["trace", "rank", "world_size", "step", *BREAKDOWN, "overlap_tax_us", "caveats"]


def _blank(value: object) -> object:
    return "" if value is None else value


def _write(table: pl.DataFrame) -> str:
    """Floats to 6 decimals (ns in µs columns; no binary noise such as 121.37100000000001)."""
    return table.with_columns(cs.float().round(6)).write_csv()


def analyze(runs: Runs, steps: StepSelection | None, per_rank: bool = False) -> str:
    """One row per rank and step (the first, "before_first_step", for kernels launched before
    the profiling window), then one row per rank with step "total"."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(ANALYZE_COLUMNS)
    for r in build.analyze(runs, steps).ranks:
        tax = r.overlap_tax
        said = " | ".join(
            c for c in (caveats(r), tax and tax.caveat and f"overlap tax: {tax.caveat}") if c
        )
        for step, b in rank_rows(r, "before_first_step"):
            times = [getattr(b, f) for f in BREAKDOWN[:-1]]
            taxed = b.overlap_tax_us if isinstance(b, d.StepRow) else tax and tax.tax_us
            writer.writerow(
                [r.trace, _blank(r.rank), _blank(r.world_size), step]
                + [_blank(v if v is None else f"{v:.3f}") for v in times]
                + [_blank(None if b.overlap_pct is None else round(b.overlap_pct, 3))]
                + [_blank(None if taxed is None else f"{taxed:.3f}"), said]
            )
    return buf.getvalue()


def collectives(runs: Runs, steps: StepSelection | None) -> str:
    jobs = build.collectives(runs, steps).jobs
    calls = [call for job in jobs for call in job.calls]
    names = [job.job for job in jobs for _ in job.calls]
    return _write(frame(calls, d.Call, lead=("job", names)))


RANK_COLUMNS = {
    "job": pl.String,
    "aligned": pl.Boolean,
    "rank": pl.Int64,
    "host": pl.String,
    "clock_offset_us": pl.Float64,
    "residual_us": pl.Float64,
    "wait_us": pl.Float64,
    "transfer_us": pl.Float64,
    "last_arrivals": pl.Int64,
    "caused_wait_us": pl.Float64,
    "straggler": pl.Boolean,
    "steps_waited_for": pl.Int64,
    "desync_signs": pl.Int64,
    "reason": pl.String,
}


def ranks(runs: Runs) -> str:
    """One row per rank of each aligned job; one row (no rank) for a job that is not aligned."""
    rows: list[dict[str, Any]] = []
    for job in build.ranks(runs).jobs:
        if not job.compared:
            continue
        if not job.aligned:
            rows.append({"job": job.job, "aligned": False, "reason": job.reason})
        per_step = job.stragglers.per_step if job.stragglers else []
        signs = job.desync.signs if job.desync else []
        rows += [
            {
                "job": job.job,
                "aligned": True,
                **msgspec.structs.asdict(a),
                "straggler": a.rank == job.straggler,
                "steps_waited_for": sum(1 for s in per_step if s.rank == a.rank),
                "desync_signs": sum(1 for s in signs if s.rank == a.rank),
                "reason": job.reason,
            }
            for a in job.per_rank
        ]
    return _write(pl.DataFrame(rows, schema=RANK_COLUMNS))


COMPARE_COLUMNS = [
    "strategy",
    "dp",
    "step_seconds",
    "step_seconds_min",
    "step_seconds_max",
    "steps_measured",
    "step_source",
    "samples_per_s",
    "tokens_per_s",
    "efficiency",
    "exposed_comm_fraction",
    "traffic_psi",
    "traffic_theory_psi",
    "traffic_theory_as_run_psi",
    "comm_volume_psi",
    "comm_volume_theory_psi",
    "comm_volume_theory_as_run_psi",
    "precision",
    "model_state_bytes",
    "model_state_theory_bytes",
    "model_state_layout_bytes",
    "caveats",
    "job",
    "strategy_source",
    "strategy_evidence",
    "threads_per_rank",  # columns are added at the end: a reader by position keeps working
    "predicted_from_dp",  # docs/metrics.md "Predictions checked": runs the model was checked on
    "predicted_step_seconds",
    "prediction_error_pct",
]


def compare(runs: Runs, memory_budget_bytes: float | None = None) -> str:
    """One row per run (findings are sentences, not rows: the table and JSON carry them)."""
    doc = build.compare(runs, memory_budget_bytes)
    checked = {(c.strategy, c.dp): c for c in doc.predictions_checked}
    records = []
    for r in doc.runs:
        known = r.dp is not None and r.strategy_source != "inferred"
        c = checked.get((r.strategy, r.dp)) if known else None  # type: ignore[arg-type]
        records.append(
            {
                **msgspec.structs.asdict(r),
                "caveats": "; ".join(r.caveats),
                "predicted_from_dp": c.from_dp if c else None,
                "predicted_step_seconds": c.predicted_step_seconds if c else None,
                "prediction_error_pct": c.error_pct if c else None,
            }
        )
    return _write(pl.DataFrame(records, infer_schema_length=None).select(COMPARE_COLUMNS))


DIFF_COLUMNS = {
    "section": pl.String, "name": pl.String, "figure": pl.String, "before": pl.Float64,
    "after": pl.Float64, "change": pl.Float64, "change_pct": pl.Float64, "noise": pl.Float64,
    "within_noise": pl.Boolean, "caveats": pl.String,
}  # fmt: skip


def diff(runs: Runs, a: StepSelection | None, b: StepSelection | None) -> str:
    """One row per figure: the step and its parts, each collective's and bucket's calls, MB,
    ms and exposed ms per rank and step, the kernels that changed most, and each rank's step,
    parts and waiting against itself; each with the comparison's caveats and what differs in
    the runs' set-up."""
    doc = diff_document(runs, a, b)
    rows: list[dict[str, Any]] = []
    differs = [f"the runs differ in {c.what}: {c.before} → {c.after}" for c in doc.setup]
    said = "; ".join([*doc.caveats, *differs]) or None

    def add(section: str, name: str, c: d.ChangeJson) -> None:
        rows.append({"section": section, "name": name, "figure": c.what, "before": c.before,
                     "after": c.after, "change": c.change, "change_pct": c.change_pct,
                     "noise": c.noise, "within_noise": c.within_noise,
                     "caveats": said})  # fmt: skip

    add("step", "step", doc.step_ms)
    for p in doc.parts:
        add("step", p.what, p)
    for section, items in (("collective", doc.collectives), ("label", doc.labels)):
        for c in items:
            for figure in (c.calls, c.megabytes, c.duration_ms, c.exposed_ms):
                add(section, c.name, figure)
    for k in doc.kernels:
        add("kernel", k.what, k)
    for r in doc.ranks:
        for each in (r.step_ms, r.compute, r.exposed, r.idle, r.waiting):
            if each is not None:
                add("rank", str(r.rank), each)
    return _write(pl.DataFrame(rows, schema=DIFF_COLUMNS))


PATH_COLUMNS = {
    "job": pl.String, "step": pl.Int64, "step_us": pl.Float64, "crossings": pl.Int64,
    "rank": pl.Int64, "category": pl.String, "us": pl.Float64, "share": pl.Float64,
    "caveats": pl.String,
}  # fmt: skip


def critical_path(runs: Runs, steps: StepSelection | None) -> str:
    """One row per job, step, rank and category of the critical path: the step's time on it
    (the rows of a step sum to its step_us), with the job's caveats; a job without a path, one
    row saying why."""
    rows: list[dict[str, Any]] = []
    for job in path_document(runs, steps).jobs:
        said = "; ".join([*([job.reason] if job.reason else []), *job.caveats])
        if not job.found:
            rows.append({"job": job.job, "caveats": said})
        rows += [
            {"job": job.job, "step": s.step, "step_us": s.step_us, "crossings": s.crossings,
             "rank": p.rank, "category": p.category, "us": p.us, "share": p.share,
             "caveats": said}
            for s in job.steps
            for p in s.parts
        ]  # fmt: skip
    return _write(pl.DataFrame(rows, schema=PATH_COLUMNS))
