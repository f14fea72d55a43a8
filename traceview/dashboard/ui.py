"""What every page shares: choosing a run, and showing a problem as a message, not a trace."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import streamlit as st

from traceview import Job, TraceviewError
from traceview.dashboard import data
from traceview.dashboard.upload import UPLOADS
from traceview.errors import A_BUG, one_line

T = TypeVar("T")


def guarded(what: str, load: Callable[[], T]) -> T | None:
    """Run `load`; on bad input show one clear message in the page and return None."""
    try:
        return load()
    except TraceviewError as e:
        st.error(one_line(f"{what}: {e.message}"))
    except (OSError, ValueError) as e:
        st.error(one_line(f"{what}: {e}"))
    except Exception as e:  # a bug: this run's message, not a traceback over the page
        st.error(one_line(f"{what}: internal error: {type(e).__name__}: {e} {A_BUG}"))
    return None


def pick_run(label: str = "run") -> tuple[str, Job] | None:
    runs = guarded("Runs", lambda: data.discover_runs(str(data.root())))
    if runs is None:
        return None
    uploads: dict[str, Job] = st.session_state.get(UPLOADS, {})
    if runs.height == 0 and not uploads:
        st.warning(f"No traces under {data.root()}. Start the dashboard on a run or sweep folder.")
        return None
    names = runs["run"].to_list() + list(uploads)
    default = st.session_state.get("run")
    first = int(runs["traces"].arg_max() or 0) if runs.height else 0  # the most ranks
    choice = st.sidebar.selectbox(
        label, names, index=names.index(default) if default in names else first
    )
    st.session_state["run"] = choice
    job = uploads[choice] if choice in uploads else guarded(choice, lambda: data.job_for(choice))
    if job is None:
        return None
    if job.run is not None and len(job.ranks) < job.run.world_size:
        found = sorted(r.rank for r in job.ranks if r.rank is not None)
        st.warning(
            f"run.json lists {job.run.world_size} ranks but traces of only {len(job.ranks)} "
            f"were read (ranks {found}): cross-rank numbers cover those alone."
        )
    for r in job.ranks:
        for note in r.notes:
            if note.lossy or note.caveat:
                st.warning(f"{r.trace.name}: {note.message}")
    return choice, job
