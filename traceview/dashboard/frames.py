"""Tidy frames of loaded runs, one row per observation: what the dashboard's charts and the
static report draw. Every number comes from the documents every output renders
(traceview/documents: the overlap per step, the calls, the runs compared) or from the public API
(traceview.load); nothing new is computed for display."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict

import polars as pl

from traceview import (
    BANDWIDTH_ON_DURATION,
    LOWER_BOUND,
    STATE_CATEGORIES,
    Job,
    Runs,
    layout_bytes,
    model_state_bytes,
    overlap_spans,
    run_precision,
    union,
)
from traceview.documents import StepSelection, build
from traceview.documents import structs as d
from traceview.documents.frames import frame as record_table

# A step's window in four parts: the document's figure and the words charts and tables use.
OVERLAP_PARTS = {
    "compute_only": "compute only",
    "overlap": "overlap",
    "exposed_comm": "exposed comm",
    "idle": "idle",
}


def overlap_frame(job: Job) -> pl.DataFrame:
    """rank, step, part (compute only | overlap | exposed comm | idle), ms — the parts add up
    to the step window (from the analyze document's step rows)."""
    rows = [
        {"rank": r.rank, "step": s.step, "part": OVERLAP_PARTS[part], "ms": value / 1e3}
        for r in (build.rank(report, job.name, None) for report in job.ranks)
        for s in r.steps
        if not s.before_first_step
        for part in OVERLAP_PARTS
        if (value := getattr(s, f"{part}_us")) is not None  # unknown where comm is not measured
    ]
    schema = {"rank": pl.Int64, "step": pl.Int64, "part": pl.String, "ms": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def scaling_frame(runs: Runs) -> pl.DataFrame:
    """One row per run (the compare document's runs); `caveats` joined into one string."""
    rows = build.compare(runs).runs
    return pl.DataFrame([{**asdict(r), "caveats": "; ".join(r.caveats) or None} for r in rows])


# The scaling table as people read it: column (label with its unit, number format).
SCALING_COLUMNS = {
    "job": ("run", None),
    "strategy": ("strategy", None),
    "strategy_source": ("strategy from", None),
    "dp": ("DP", "{:d}"),
    "threads_per_rank": ("threads/rank", "{:d}"),
    "step_seconds": ("step s (median)", "{:.3f}"),
    "step_seconds_min": ("step s min", "{:.3f}"),
    "step_seconds_max": ("step s max", "{:.3f}"),
    "samples_per_s": ("samples/s", "{:,.1f}"),
    "tokens_per_s": ("tokens/s", "{:,.0f}"),
    "efficiency": ("E(N)", "{:.2f}"),
    "exposed_comm_fraction": ("exposed comm %", "{:.1%}"),
    "traffic_psi": ("traffic Ψ", "{:.2f}"),
    "traffic_theory_psi": ("traffic Ψ theory", "{:.2f}"),
    "traffic_theory_as_run_psi": ("traffic Ψ as run", "{:.2f}"),
    "comm_volume_psi": ("buffers Ψ", "{:.2f}"),
    "comm_volume_theory_psi": ("buffers Ψ theory", "{:.2f}"),
    "comm_volume_theory_as_run_psi": ("buffers Ψ as run", "{:.2f}"),
    "model_state_bytes": ("model states MB", "{:,.1f}"),
    "model_state_theory_bytes": ("theory MB", "{:,.1f}"),
    "caveats": ("caveats", None),
}


def readable(frame: pl.DataFrame, columns: Mapping[str, tuple[str, str | None]]) -> pl.DataFrame:
    """The columns named as people read them, numbers formatted, unknowns '–' (not None);
    byte columns in MB."""
    out = {}
    for name, (label, fmt) in columns.items():
        if name not in frame.columns:
            continue
        values = frame[name].to_list()
        if name.endswith("_bytes"):
            values = [None if v is None else v / 1e6 for v in values]
        out[label] = ["–" if v is None else (fmt.format(v) if fmt else str(v)) for v in values]
    return pl.DataFrame(out, schema=dict.fromkeys(out, pl.String))


def prediction_frame(runs: Runs) -> pl.DataFrame | None:
    """strategy, dp, step_seconds, efficiency of the what-if (traceview.Prediction); None when
    there is nothing to predict from."""
    predicted = runs.predictions()
    return pl.DataFrame([asdict(p) for p in predicted]) if predicted else None


def withheld_lines(runs: Runs) -> list[str]:
    """Each strategy that gets no prediction though it has runs to predict from, and why."""
    return [f"no prediction for {w.strategy}: {w.why}" for w in runs.withheld_predictions()]


def caveat_lines(runs: Runs, root: str = "") -> list[str]:
    """Every caveat of the runs, each once: the comparison's, what an inferred strategy rests
    on, then each run's rank notes with the ranks they hold for. Run names shown relative to
    `root`."""

    def short(name: str) -> str:
        return name.removeprefix(root).lstrip("/") or name if root else name

    rows = build.compare(runs).runs
    lines = [f"{short(r.job)}: {c}" for r in rows for c in r.caveats]
    lines += [
        f"{short(r.job)}: strategy {r.strategy} inferred from the traces: {r.strategy_evidence}"
        for r in rows
        if r.strategy_source == "inferred" and r.strategy_evidence
    ]
    for job in runs.jobs:
        ranks: dict[str, list[str]] = {}
        for r in job.ranks:
            for note in r.notes:
                if note.caveat:
                    ranks.setdefault(note.message, []).append(str(r.rank))
        lines += [
            f"{short(job.name)} (ranks {', '.join(who)}): {msg}" for msg, who in ranks.items()
        ]
    return lines


def memory_frame(job: Job) -> pl.DataFrame:
    """rank, category, measured_mb, theory_mb (the textbook ZeRO formula for the run's
    precision), as_run_mb (the layout the harness holds, where it differs; else null), and the
    precision; needs a run record."""
    schema = {
        "rank": pl.Int64,
        "category": pl.String,
        "measured_mb": pl.Float64,
        "theory_mb": pl.Float64,
        "as_run_mb": pl.Float64,
        "precision": pl.String,
    }
    run = job.run
    precision = run_precision(run.config) if run else None
    if run is None or precision is None:
        return pl.DataFrame(schema=schema)
    psi, n = run.num_params, run.world_size
    formula = model_state_bytes(run.strategy, psi, n, precision) or {}
    layout = layout_bytes(run.strategy, psi, n, precision)
    rows = [
        {
            "rank": r.rank,
            "category": cat,
            "measured_mb": r.model_state_bytes.get(cat, 0) / 1e6,
            "theory_mb": formula.get(cat, 0.0) / 1e6,
            "as_run_mb": layout[cat] / 1e6 if layout else None,
            "precision": precision,
        }
        for r in run.ranks
        for cat in STATE_CATEGORIES
    ]
    return pl.DataFrame(rows, schema=schema)


def calls_frame(job: Job, step: int | None = None) -> pl.DataFrame:
    """Collective calls (of one step, if given; the collectives document's calls) with times in
    ms from the first call's ready time, and a label (bucket, else module, else the
    collective)."""
    steps = None if step is None else StepSelection(((step, step),))
    calls = record_table(build.job_calls(job, steps).calls, d.Call)
    if calls.height == 0:
        return calls
    origin = calls["ready_us"].drop_nulls().min() or calls["start_us"].min()
    return calls.with_columns(
        label=pl.coalesce(pl.col("label"), pl.col("collective")),
        ready_ms=(pl.col("ready_us") - origin) / 1e3,
        start_ms=(pl.col("start_us") - origin) / 1e3,
        end_ms=(pl.col("end_us") - origin) / 1e3,
        mb=pl.col("bytes") / 1e6,
        duration_ms=pl.col("duration_us") / 1e3,
        exposed_ms=pl.col("exposed_us") / 1e3,
        bandwidth_from=pl.when(pl.col("bandwidth_on") == "duration")
        .then(pl.lit(f"duration ({LOWER_BOUND} {BANDWIDTH_ON_DURATION})"))
        .otherwise(pl.col("bandwidth_on")),
    )


def timeline_frame(job: Job, step: int, max_intervals: int = 4000) -> tuple[pl.DataFrame, bool]:
    """rank, lane, kind, start_ms, end_ms of one step (ms from the step's earliest start), plus
    'overlap' and 'exposed comm' lanes per rank. Above `max_intervals` the intervals of each lane
    and kind are merged where they touch or overlap (True is returned: say so)."""
    parts = []
    # The job's intervals, read from its traces (or store) when first asked for.
    chosen = job.intervals.filter((pl.col("step") == step) & (pl.col("kind") != "other"))
    for (rank,), iv in chosen.partition_by("rank", as_dict=True, maintain_order=True).items():
        extra = zip(("overlap", "exposed comm"), overlap_spans(iv), strict=True)
        parts.append(
            iv.select(
                pl.lit(rank).alias("rank"),
                "lane",
                pl.col("kind").cast(pl.String),
                pl.col("name").cast(pl.String),
                "ts_ns",
                "end_ns",
            )
        )
        for lane, spans in extra:
            parts.append(
                pl.DataFrame(
                    {
                        "rank": [rank] * len(spans),
                        "lane": [lane] * len(spans),
                        "kind": [lane] * len(spans),
                        "name": [lane] * len(spans),
                        "ts_ns": spans.starts,
                        "end_ns": spans.ends,
                    }
                )
            )
    schema = {
        "rank": pl.Int64,
        "lane": pl.String,
        "kind": pl.String,
        "name": pl.String,
        "start_ms": pl.Float64,
        "end_ms": pl.Float64,
    }
    if not parts:
        return pl.DataFrame(schema=schema), False
    frame = pl.concat(parts, how="vertical_relaxed")
    merged = frame.height > max_intervals
    if merged:
        frame = _merge_touching(frame)
    origin = frame["ts_ns"].min()
    return (
        frame.select(
            "rank",
            "lane",
            "kind",
            "name",
            start_ms=(pl.col("ts_ns") - origin) / 1e6,
            end_ms=(pl.col("end_ns") - origin) / 1e6,
        ).cast(schema),  # type: ignore[arg-type]
        merged,
    )


def _merge_touching(frame: pl.DataFrame) -> pl.DataFrame:
    out = []
    for (rank, lane, kind), rows in frame.group_by("rank", "lane", "kind"):
        spans = union(rows["ts_ns"].to_numpy(), rows["end_ns"].to_numpy())
        n = len(spans)
        out.append(
            pl.DataFrame(
                {
                    "rank": [rank] * n,
                    "lane": [lane] * n,
                    "kind": [kind] * n,
                    "name": [f"{kind} (merged)"] * n,
                    "ts_ns": spans.starts,
                    "end_ns": spans.ends,
                }
            )
        )
    return pl.concat(out, how="vertical_relaxed")
