"""Loading for the dashboard: every number comes from the traceview library; this module only
finds runs under the root folder, refuses paths outside it, and caches."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import polars as pl
import streamlit as st

from traceview.analysis import analyze_trace
from traceview.analysis.job import JobReport, analyze_job
from traceview.analysis.scaling import record_step_times
from traceview.errors import TraceviewError
from traceview.inputs import is_trace_file
from traceview.parse.run_record import RunRecord, read_run_record

ROOT_ENV = "TRACEVIEW_DASHBOARD_ROOT"
MAX_UPLOAD_MB = 200


def root() -> Path:
    """The folder the dashboard was started on: the env var `traceview dashboard` sets, else
    `streamlit run app.py -- PATH`, else sample_traces/."""
    if ROOT_ENV in os.environ:
        return Path(os.environ[ROOT_ENV]).resolve()
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    return Path(args[0] if args else "sample_traces").resolve()


def inside_root(path: Path) -> Path:
    """`path` resolved, if it lies inside the root; anything else is refused."""
    resolved = (root() / path).resolve()
    if not resolved.is_relative_to(root()):
        raise TraceviewError(f"{path}: outside the folder the dashboard reads ({root()})")
    return resolved


def _is_trace(p: Path) -> bool:
    """A trace file that really lies inside the root: a link to a file elsewhere is not read."""
    return is_trace_file(p) and p.resolve().is_relative_to(root())


def _samples_per_s(record: RunRecord) -> float | None:
    times = record_step_times(record)
    return record.global_batch.samples / times.median_s if times and times.median_s else None


@st.cache_data(show_spinner="Looking for runs…")
def discover_runs(base: str) -> pl.DataFrame:
    """Every folder under `base` that holds trace files, with its run record's summary."""
    rows = []
    for folder in sorted({p.parent for p in Path(base).rglob("*") if _is_trace(p)}):
        try:
            record = read_run_record(folder)
        except TraceviewError:
            record = None
        rows.append(
            {
                "run": str(folder.relative_to(base)) if folder != Path(base) else ".",
                "strategy": record.strategy if record else None,
                "dp": record.world_size if record else None,
                "traces": sum(1 for p in folder.iterdir() if _is_trace(p)),
                "preset": str(record.config.get("preset")) if record else None,
                "samples_per_s": _samples_per_s(record) if record else None,
            }
        )
    schema = {
        "run": pl.String,
        "strategy": pl.String,
        "dp": pl.Int64,
        "traces": pl.Int64,
        "preset": pl.String,
        "samples_per_s": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema)


@st.cache_data(show_spinner="Analysing traces…", max_entries=32)
def load_job(folder: str, stamp: float) -> JobReport:
    """A run folder's job report (stamp: the folder's newest mtime, so edits reload)."""
    del stamp
    path = inside_root(Path(folder))
    files = sorted(p for p in path.iterdir() if _is_trace(p))
    if not files:
        raise TraceviewError(f"{folder}: no traces")
    return analyze_job(path, [analyze_trace(p, keep_intervals=True) for p in files])


def job_for(run: str) -> JobReport:
    path = inside_root(Path(run))
    stamp = max((p.stat().st_mtime for p in path.iterdir()), default=0.0)
    return load_job(str(path), stamp)
