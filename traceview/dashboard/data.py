"""Loading for the dashboard, through the front door (traceview.load) and nothing else: the
runs under the root folder, nothing read outside it, cached."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Imported here, whole, before any page runs: each browser session runs the pages on a thread
# of its own, and two threads importing pandas at once (altair imports it on first use) can see
# it half initialised. Every session imports this module first, so they take turns.
import altair  # noqa: F401
import pandas  # noqa: F401
import polars as pl
import streamlit as st

import traceview
from traceview import Job, TraceviewError
from traceview.dashboard import ROOT_ENV
from traceview.documents.frames import frame
from traceview.documents.words import job_said


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


def _path(source: traceview.RunSource, base: Path) -> str:
    where = source.folder if source.folder is not None else source.files[0]
    return str(where.relative_to(base)) if where != base else "."


def _name(source: traceview.RunSource, base: Path) -> str:
    """The run as the pages name it: its path under the root; a stored job by its name."""
    path = Path(_path(source, base))
    return str(path.parent / job_said(str(path), whole=False)) if source.stored else str(path)


@st.cache_data(show_spinner="Looking for runs…")
def discover_runs(base: str) -> pl.DataFrame:
    """Every run under `base` (as every command finds them), with its run record's headline."""
    folder = Path(base)
    sources = traceview.find_runs([folder], within=folder, empty_ok=True)
    names = [_name(source, folder) for source in sources]
    summaries = [traceview.summarize(source) for source in sources]
    found = frame(summaries, traceview.RunSummary, lead=("run", names))
    return found.with_columns(path=pl.Series([_path(source, folder) for source in sources]))


@st.cache_resource(show_spinner="Analysing traces…", max_entries=32)
def load_job(folder: str, stamp: float) -> Job:
    """A run's job, its run record read (stamp: the folder's newest mtime, so edits reload)."""
    del stamp
    # Intervals only when a page asks for them (the timeline): the other pages never do.
    job = traceview.load(inside_root(Path(folder)), within=root())
    job.run  # noqa: B018 -- a broken run.json is this run's error, said once, here
    return job


def job_for(run: str) -> Job:
    """The run a page names (discover_runs' `run`), loaded."""
    runs = discover_runs(str(root()))
    paths = dict(zip(runs["run"], runs["path"], strict=True)) if runs.height else {}
    path = inside_root(Path(paths.get(run, run)))
    stamp = max((p.stat().st_mtime for p in path.iterdir()), default=0.0)
    return load_job(str(path), stamp)
