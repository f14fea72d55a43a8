"""Job reports -> tables, JSON and CSV for `traceview collectives` and `traceview ranks`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import polars as pl

from traceview import __version__
from traceview.analysis.comm_summary import AlphaBetaFit
from traceview.analysis.cross_rank import RankAlignment
from traceview.analysis.job import JobReport
from traceview.cli.render import SCHEMA_VERSION
from traceview.cli.steps import StepSelection
from traceview.cli.text import aligned

CALL_COLUMNS = [
    "rank",
    "step",
    "index",
    "collective",
    "label",
    "pg",
    "seq",
    "group_size",
    "backward",
    "ready_us",
    "start_us",
    "end_us",
    "queue_us",
    "duration_us",
    "wait_us",
    "transfer_us",
    "bytes",
    "algbw_gbps",
    "busbw_gbps",
    "exposed_us",
]


def _label(job: JobReport) -> pl.Expr:
    """DDP bucket index (with its parameters in JSON), else the FSDP module."""
    bucket = pl.format("bucket {}", pl.col("bucket")) if "bucket" in job.calls.columns else None
    module = pl.col("module")
    return pl.coalesce(*(e for e in (bucket, module) if e is not None)).alias("label")


def calls_table(job: JobReport, steps: StepSelection | None) -> pl.DataFrame:
    calls = job.calls
    if calls.height == 0:
        return pl.DataFrame(schema=dict.fromkeys(CALL_COLUMNS, pl.String))
    if steps is not None:
        calls = calls.filter(steps.expr("step"))
    for col in ("wait_ns", "transfer_ns"):
        if col not in calls.columns:
            calls = calls.with_columns(pl.lit(None, pl.Int64).alias(col))
    us = {
        f"{c}_us": pl.col(f"{c}_ns") / 1000
        for c in ("ready", "start", "end", "queue", "wait", "transfer", "exposed")
    }
    return calls.with_columns(_label(job), duration_us=pl.col("dur_ns") / 1000, **us).select(
        CALL_COLUMNS
    )


def exposed_by_step(table: pl.DataFrame) -> list[dict[str, Any]]:
    """Per rank and step: the calls left exposed, most exposed first (which buckets to fix)."""
    if table.height == 0:
        return []
    out = []
    exposed = table.filter(pl.col("exposed_us") > 0).sort("exposed_us", descending=True)
    for (rank, step), rows in exposed.group_by("rank", "step", maintain_order=True):
        out.append(
            {
                "rank": rank,
                "step": step,
                "exposed_us": rows["exposed_us"].sum(),
                "calls": rows.select("index", "collective", "label", "exposed_us").to_dicts(),
            }
        )
    return sorted(out, key=lambda e: (e["rank"] is None, e["rank"], e["step"] is None, e["step"]))


def fit_json(fit: AlphaBetaFit, current: float | None) -> dict[str, Any]:
    return {
        "collective": fit.collective,
        "calls": fit.calls,
        "distinct_sizes": fit.distinct_sizes,
        "alpha_us": _num(fit.alpha_us),
        "bandwidth_gbps": _num(fit.bandwidth_gbps),
        "r2": _num(fit.r2),
        "confidence": fit.confidence,
        "why": fit.why,
        "size_for_90pct_bytes": _num(fit.size_for_90pct_bytes),
        "advice": fit.advice(current),
    }


def _num(value: float | None) -> float | None:
    return None if value is None else float(value)


def _median_bytes(job: JobReport, collective: str) -> float | None:
    sizes = job.calls.filter(pl.col("collective") == collective)["bytes"].drop_nulls()
    return float(sizes.median()) if sizes.len() else None  # type: ignore[arg-type]


def _job_head(job: JobReport) -> dict[str, Any]:
    return {
        "folder": None if job.folder is None else str(job.folder),
        "traces": [str(r.trace) for r in job.ranks],
        "strategy": job.run.strategy if job.run else None,
    }


def collectives_json(jobs: Sequence[JobReport], steps: StepSelection | None) -> str:
    out = []
    for job in jobs:
        buckets = (
            {b.index: b.params for b in job.run.ddp_buckets}
            if job.run and job.run.ddp_buckets
            else {}
        )
        rows = calls_table(job, steps).to_dicts()
        out.append(
            {
                **_job_head(job),
                "calls": rows,
                "exposed_by_step": exposed_by_step(calls_table(job, steps)),
                "bucket_params": {str(k): v for k, v in buckets.items()},
                "backward_tails": [
                    {"rank": r.rank, "step": t.step, "tail_us": t.tail_ns / 1000}
                    for r in job.ranks
                    for t in r.backward_tails
                    if steps is None or t.step in steps
                ],
                "aligned": job.cross_rank is not None and job.cross_rank.aligned,
                "not_aligned_reason": job.cross_rank.reason
                if job.cross_rank is not None and not job.cross_rank.aligned
                else None,
                "fits_on": job.fit_on,
                "fits": [fit_json(f, _median_bytes(job, f.collective)) for f in job.fits],
            }
        )
    doc = {"traceview_version": __version__, "schema_version": SCHEMA_VERSION, "jobs": out}
    return json.dumps(doc, indent=2) + "\n"


def collectives_csv(jobs: Sequence[JobReport], steps: StepSelection | None) -> str:
    frames = [
        calls_table(j, steps).with_columns(
            pl.lit(_job_head(j)["folder"] or j.ranks[0].trace.name).alias("job")
        )
        for j in jobs
    ]
    return pl.concat(frames, how="diagonal_relaxed").select("job", *CALL_COLUMNS).write_csv()


def collectives_table(jobs: Sequence[JobReport], steps: StepSelection | None) -> str:
    lines = []
    for job in jobs:
        head = job.folder or job.ranks[0].trace
        strategy = f" · {job.run.strategy}" if job.run else ""
        lines.append(f"{head}{strategy} · {len(job.ranks)} trace(s)")
        table = calls_table(job, steps)
        if table.height == 0:
            lines.append("  no collective calls")
        else:
            lines += _aligned(table)
        for e in exposed_by_step(table):
            worst = ", ".join(
                f"{c['label'] or (c['collective'] or 'unknown') + ' #' + str(c['index'])} "
                f"{c['exposed_us'] / 1000:,.3f} ms"
                for c in e["calls"][:3]
            )
            lines.append(f"  rank {e['rank']} step {e['step']}: most exposed: {worst}")
        for r in job.ranks:
            for t in r.backward_tails:
                if steps is None or t.step in steps:
                    lines.append(
                        f"  rank {r.rank} step {t.step}: backward tail {t.tail_ns / 1e6:,.3f} ms "
                        "(end of backward compute -> end of the last gradient collective)"
                    )
        if job.cross_rank is not None and not job.cross_rank.aligned:
            lines.append(
                f"  no wait/transfer split: the ranks are not aligned ({job.cross_rank.reason})"
            )
        basis = (
            "transfer times (after cross-rank alignment)"
            if job.fit_on == "transfer"
            else "durations"
        )
        for fit in job.fits:
            if fit.alpha_us is not None and fit.bandwidth_gbps is not None:
                lines.append(
                    f"  {fit.collective} fit on {basis}: α {fit.alpha_us:,.1f} µs, "
                    f"{fit.bandwidth_gbps:,.2f} GB/s, R² {fit.r2:.2f}"
                )
            lines.append(f"  {fit.collective}: {fit.advice(_median_bytes(job, fit.collective))}")
        lines.append("")
    return "\n".join(lines)


_SHOW = [
    ("rank", "rank", "{}"),
    ("step", "step", "{}"),
    ("index", "#", "{}"),
    ("collective", "collective", "{}"),
    ("label", "label", "{}"),
    ("group_size", "group", "{}"),
    ("queue_us", "queue µs", "{:,.1f}"),
    ("duration_us", "duration µs", "{:,.1f}"),
    ("wait_us", "wait µs", "{:,.1f}"),
    ("transfer_us", "transfer µs", "{:,.1f}"),
    ("bytes", "MB", "{:,.2f}"),
    ("busbw_gbps", "busbw GB/s", "{:,.2f}"),
    ("exposed_us", "exposed µs", "{:,.1f}"),
]


def _aligned(table: pl.DataFrame) -> list[str]:
    rows = [[h for _, h, _ in _SHOW]]
    for r in table.iter_rows(named=True):
        cells = []
        for col, _, fmt in _SHOW:
            v = r[col]
            if col == "bytes" and v is not None:
                v = v / 1e6
            cells.append("-" if v is None else fmt.format(v))
        rows.append(cells)
    return aligned(rows)


def _alignment(a: RankAlignment) -> dict[str, Any]:
    return {
        "rank": a.rank,
        "clock_offset_us": a.offset_ns / 1000,
        "residual_us": a.residual_ns / 1000,
        "wait_us": a.wait_ns / 1000,
        "transfer_us": a.transfer_ns / 1000,
        "last_arrivals": a.last_arrivals,
    }


def ranks_json(jobs: Sequence[JobReport]) -> str:
    out = []
    for job in jobs:
        cross = job.cross_rank
        out.append(
            {
                **_job_head(job),
                "ranks": len(job.ranks),
                "aligned": cross is not None and cross.aligned,
                "reason": cross.reason if cross else None,
                "matched_by": cross.matched_by if cross else None,
                "reference_rank": cross.reference_rank if cross else None,
                "matched_collectives": cross.matched if cross else 0,
                "rejected_matches": cross.rejected if cross else 0,
                "unmatched_calls": cross.unmatched if cross else 0,
                "straggler": cross.straggler if cross else None,
                "per_rank": [_alignment(a) for a in (cross.ranks if cross else ())],
                "step_skew": [
                    {
                        "step": s.step,
                        "shortest_us": s.shortest_ns / 1000,
                        "longest_us": s.longest_ns / 1000,
                        "skew_us": s.skew_ns / 1000,
                        "slowest_rank": s.slowest_rank,
                    }
                    for s in job.step_skew
                ],
            }
        )
    doc = {"traceview_version": __version__, "schema_version": SCHEMA_VERSION, "jobs": out}
    return json.dumps(doc, indent=2) + "\n"


RANK_CSV_SCHEMA = {
    "job": pl.String,
    "aligned": pl.Boolean,
    "rank": pl.Int64,
    "clock_offset_us": pl.Float64,
    "residual_us": pl.Float64,
    "wait_us": pl.Float64,
    "transfer_us": pl.Float64,
    "last_arrivals": pl.Int64,
    "straggler": pl.Boolean,
    "reason": pl.String,
}


def ranks_csv(jobs: Sequence[JobReport]) -> str:
    """One row per rank of each aligned job; one row (no rank) for a job that is not aligned."""
    rows: list[dict[str, Any]] = []
    for job in jobs:
        cross = job.cross_rank
        if cross is None:
            continue
        if not cross.aligned:
            rows.append({"job": str(job.folder), "aligned": False, "reason": cross.reason})
        rows += [
            {
                "job": str(job.folder),
                "aligned": True,
                **_alignment(a),
                "straggler": a.rank == cross.straggler,
                "reason": cross.reason,
            }
            for a in cross.ranks
        ]
    return pl.DataFrame(rows, schema=RANK_CSV_SCHEMA).write_csv()


def ranks_table(jobs: Sequence[JobReport]) -> str:
    lines = []
    for job in jobs:
        cross = job.cross_rank
        head = job.folder or job.ranks[0].trace
        if cross is None:
            lines += [
                f"{head}: {len(job.ranks)} rank trace(s); cross-rank analysis needs two or more "
                "traces of one job with known ranks",
                "",
            ]
            continue
        if not cross.aligned:
            lines.append(
                f"{head} · {len(job.ranks)} ranks · NOT ALIGNED: {cross.reason}; no clock "
                "offsets, wait/transfer split or straggler"
            )
            lines += _skew_lines(job)
            lines.append("")
            continue
        rejected = f", {cross.rejected} rejected" if cross.rejected else ""
        lines.append(
            f"{head} · {len(job.ranks)} ranks · {cross.matched} collectives matched on every "
            f"rank by {cross.matched_by} ({cross.unmatched} calls unmatched{rejected}) · clocks "
            f"on rank {cross.reference_rank}'s"
        )
        if cross.reason:
            lines.append(f"  note: {cross.reason}")
        rows = [
            ["rank", "clock offset µs", "residual µs", "wait ms", "transfer ms", "arrived last"]
        ]
        for a in cross.ranks:
            rows.append(
                [
                    str(a.rank),
                    f"{a.offset_ns / 1000:,.1f}",
                    f"{a.residual_ns / 1000:,.1f}",
                    f"{a.wait_ns / 1e6:,.3f}",
                    f"{a.transfer_ns / 1e6:,.3f}",
                    f"{a.last_arrivals} of {cross.matched}",
                ]
            )
        lines += aligned(rows)
        if cross.straggler is not None:
            a = cross.of(cross.straggler)
            lines.append(
                f"  straggler: rank {a.rank} (arrived last at {a.last_arrivals} of "
                f"{cross.matched} collectives)"
            )
        lines += _skew_lines(job)
        lines.append("")
    return "\n".join(lines)


def _skew_lines(job: JobReport) -> list[str]:
    return [
        f"  step {s.step}: {s.shortest_ns / 1e6:,.3f}–{s.longest_ns / 1e6:,.3f} ms "
        f"across ranks (skew {s.skew_ns / 1e6:,.3f} ms, slowest rank {s.slowest_rank})"
        for s in job.step_skew
    ]
