"""Tidy frames of loaded runs, one row per observation: what the dashboard's charts and the
static report draw. Every number comes from the documents every output renders
(traceview/documents: the overlap per step, the calls, the runs compared) or from the public API
(traceview.load); nothing new is computed for display."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import polars as pl

from traceview import (
    BANDWIDTH_ON_DURATION,
    LOWER_BOUND,
    STATE_CATEGORIES,
    Job,
    Runs,
    layout_bytes,
    model_state_bytes,
    run_precision,
)
from traceview.documents import StepSelection, build
from traceview.documents import structs as d
from traceview.documents.frames import columns as record_columns
from traceview.documents.words import link_said, prediction_checked_said
from traceview.plain import UNKNOWN

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
    return pl.DataFrame(
        [
            {
                **msgspec.structs.asdict(r),
                "strategy_said": r.strategy_said,
                "step_range": _step_range(r.step_seconds_min, r.step_seconds_max),
                "traffic_text": r.traffic_text,
                "comm_volume_text": r.comm_volume_text,
                "caveats": "; ".join(r.caveats) or None,
                "model": r.model.said if r.model is not None else None,  # a struct: in words
            }
            for r in rows
        ]
    )


# The scaling tables as people read them: column (label with its unit, number format). Two
# tables, each fitting the page: time and efficiency, then traffic and memory against theory.
SCALING_COLUMNS = {
    "job": ("run", None),
    "strategy_said": ("strategy", None),
    "dp": ("DP", "{:d}"),
    "threads_per_rank": ("threads", "{:d}"),
    "step_seconds": ("step s", "{:.3f}"),
    "step_range": ("min–max", None),
    "samples_per_s": ("samples/s", "{:,.1f}"),
    "tokens_per_s": ("tokens/s", "{:,.0f}"),
    "efficiency": ("E(N)", "{:.2f}"),
    "exposed_comm_fraction": ("exposed", "{:.1%}"),
}
THEORY_COLUMNS = {
    "job": ("run", None),
    "traffic_text": ("traffic Ψ (theory)", None),
    "comm_volume_text": ("buffers Ψ (theory)", None),
    "model_state_bytes": ("model states MB", "{:,.1f}"),
    "model_state_theory_bytes": ("theory MB", "{:,.1f}"),
}


# What the scaling page and the report say where runs have no run record to give E(N).
NO_STEPS = (
    "No run here has profiler steps to time or communication to set against them: call "
    "prof.step() once per training iteration (torch.profiler.schedule) for per-step figures; "
    "the tables below hold what the traces give."
)
NEEDS_A_RECORD = (
    "E(N) and throughput need each run's samples per step, which the harness's run.json "
    "records, and a DP-1 run of the same strategy beside the larger ones; from the traces "
    "alone: each run's median step and its exposed communication."
)


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
        out[label] = [UNKNOWN if v is None else (fmt.format(v) if fmt else str(v)) for v in values]
    return pl.DataFrame(out, schema=dict.fromkeys(out, pl.String))


def prediction_frame(runs: Runs) -> pl.DataFrame | None:
    """strategy, dp, step_seconds, efficiency of the what-if (traceview.Prediction); None when
    there is nothing to predict from."""
    predicted = runs.predictions()
    return pl.DataFrame([msgspec.structs.asdict(p) for p in predicted]) if predicted else None


CHECKED_NOTE = (
    "Each run above the smallest multi-rank one of a strategy, predicted from the run below it "
    "and the DP-1 run by the model above, beside its measured step time; error = (predicted − "
    "measured) ÷ measured (docs/metrics.md, “Predictions checked”)."
)


def link_words(link: object, why: str, capital: bool = False) -> str:
    """The link a job's collectives are held against (a Job's `link`), or why none is."""
    if link is None:
        said = link_said(None, None, None, None, why)
    else:
        said = link_said(link.name, link.gbps, link.scope, link.basis, None)  # type: ignore[attr-defined]
    return said[0].upper() + said[1:] if capital else said


def checked_lines(runs: Runs) -> list[str]:
    """Each measured run beside its prediction, in a sentence."""
    return [prediction_checked_said(c) for c in runs.checked_predictions()]


def withheld_lines(runs: Runs) -> list[str]:
    """Each strategy that gets no prediction though it has runs to predict from, and why."""
    return [f"no prediction for {w.strategy}: {w.why}" for w in runs.withheld_predictions()]


def caveat_lines(runs: Runs, root: str = "", with_rows: bool = True) -> list[str]:
    """Every caveat of the runs, each once: the comparison's (unless `with_rows` is False: a
    table shows them beside its rows), what an inferred strategy rests on, then each run's rank
    notes with the ranks they hold for. Run names shown relative to `root`."""

    def short(name: str) -> str:
        return name.removeprefix(root).lstrip("/") or name if root else name

    rows = build.compare(runs).runs
    lines = [f"{short(r.job)}: {c}" for r in rows for c in r.caveats] if with_rows else []
    lines += [
        f"{short(r.job)}: strategy {r.strategy} inferred from the traces: {r.strategy_evidence}"
        for r in rows
        if r.strategy_source == "inferred" and r.strategy_evidence
    ]
    for job in runs.jobs:
        lines += [f"{short(job.name)}: not read: {f.message}" for f in job.failures]
        ranks: dict[str, list[str]] = {}
        for r in job.ranks:
            for note in r.notes:
                if note.caveat:
                    ranks.setdefault(note.message, []).append(rank_label(r.rank))
        lines += [f"{short(job.name)} ({', '.join(who)}): {msg}" for msg, who in ranks.items()]
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


def _step_range(low: float | None, high: float | None) -> str | None:
    return None if low is None or high is None else f"{low:.3f}–{high:.3f}"


def rank_label(rank: int | None) -> str:
    """A rank as every page and the report say it; a trace that does not say: "rank unknown"."""
    return "rank unknown" if rank is None else f"rank {rank}"


def rank_words(column: str = "rank") -> pl.Expr:
    """rank_label of a frame's column."""
    return (
        pl.when(pl.col(column).is_null())
        .then(pl.lit("rank unknown"))
        .otherwise(pl.format("rank {}", pl.col(column)))
    )


def size_words(size: int | None) -> str:
    """A size as people read it: MB, and KB below 0.01 MB (where MB would print 0.00)."""
    if size is None:
        return UNKNOWN
    if size < 10_000:
        return f"{size / 1e3:,.1f} KB" if size >= 100 else f"{size:,d} B"
    return f"{size / 1e6:,.2f} MB"


def size_unit(largest: float) -> tuple[str, float]:
    """One unit for every size on a page: GB from 10 GB up, else MB."""
    return ("GB", 1e9) if largest >= 1e10 else ("MB", 1e6)


def _per_distinct(values: pl.Series, words: Callable[[Any], str]) -> pl.Expr:
    """`words` of each value, said once per distinct value (a job has 100,000s of calls and a
    few sizes); null stays null where `words` is not asked about it."""
    seen = values.drop_nulls().unique().to_list()
    said = pl.Series(values.name, [words(v) for v in seen], dtype=pl.String)
    return pl.lit(values).replace_strict(pl.Series(seen, dtype=values.dtype), said, default=None)


def calls_frame(job: Job, step: int | None = None) -> pl.DataFrame:
    """Collective calls (of one step, if given; the collectives document's calls) with times in
    ms from the first call's ready time, and a label (bucket, else module, else the
    collective)."""
    steps = None if step is None else StepSelection(((step, step),))
    calls = build.job_call_table(job, steps).cast(record_columns(d.Call))  # type: ignore[arg-type]
    if calls.height == 0:
        return calls
    origin = calls["ready_us"].drop_nulls().min() or calls["start_us"].min()
    return calls.with_columns(
        label=pl.coalesce(pl.col("label"), pl.col("collective")),
        ready_ms=(pl.col("ready_us") - origin) / 1e3,
        start_ms=(pl.col("start_us") - origin) / 1e3,
        end_ms=(pl.col("end_us") - origin) / 1e3,
        mb=pl.col("bytes") / 1e6,
        size=_per_distinct(calls["bytes"], size_words),
        duration_ms=pl.col("duration_us") / 1e3,
        wait_ms=pl.col("wait_us") / 1e3,
        exposed_ms=pl.col("exposed_us") / 1e3,
        bandwidth_from=pl.when(pl.col("bandwidth_on") == "duration")
        .then(pl.lit(f"duration ({LOWER_BOUND} {BANDWIDTH_ON_DURATION})"))
        .otherwise(pl.col("bandwidth_on")),
        # A lower bound says so in its cell: "≥ 0.28".
        busbw_said=pl.when(pl.col("bandwidth_on") == "duration")
        .then(pl.lit("≥ "))
        .otherwise(pl.lit(""))
        + _per_distinct(calls["busbw_gbps"].round(2), "{:,.2f}".format),
    )
