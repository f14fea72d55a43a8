"""What every page shares: choosing a run, and showing a problem as a message, not a trace."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TypeVar

import polars as pl
import streamlit as st

from traceview import Job, TraceviewError
from traceview.dashboard import data
from traceview.dashboard.upload import UPLOADS
from traceview.errors import A_BUG, one_line
from traceview.plain import counted
from traceview.presentation import overview
from traceview.presentation.frames import rank_label, readable

T = TypeVar("T")


def attempt(what: str, load: Callable[[], T]) -> tuple[T | None, str | None]:
    """Run `load`: its value, or None and one clear line saying why (bad input, or a bug)."""
    try:
        return load(), None
    except TraceviewError as e:
        return None, one_line(f"{what}: {e.message}")
    except (OSError, ValueError) as e:
        return None, one_line(f"{what}: {e}")
    except Exception as e:  # a bug: this run's message, not a traceback over the page
        return None, one_line(f"{what}: internal error: {type(e).__name__}: {e} {A_BUG}")


def guarded(what: str, load: Callable[[], T]) -> T | None:
    """Run `load`; on bad input show one clear message in the page and return None."""
    value, why = attempt(what, load)
    if why is not None:
        st.error(why)
    return value


FAILED = "runs that failed"  # this session's runs that could not be read: name -> why


def loaded_run(name: str) -> Job | None:
    """The run's job; or None, and why kept for the one box of runs that failed (failed_box)."""
    job, why = attempt(name, partial(data.job_for, name))
    failed: dict[str, str] = st.session_state.setdefault(FAILED, {})
    if why is None:
        failed.pop(name, None)
    else:
        failed[name] = why
    return job


def failed_box(runs: pl.DataFrame) -> None:
    """Every run that could not be read, once, with why and what to do: those whose records
    say so, and those that failed to load this session (in the sidebar, on every page)."""
    failed = {
        run: f"{run}: {why}" for run, why in zip(runs["run"], runs["problem"], strict=True) if why
    }
    failed |= st.session_state.get(FAILED, {})
    if failed:
        label = f"{counted(len(failed), 'run')} could not be read"
        with st.sidebar.expander(label, icon=":material/error:"):
            st.markdown("\n".join(f"- {why.translate(_MARKDOWN)}" for why in failed.values()))


CAVEATS = "Caveats"  # the label every page's one caveat box starts with
_MARKDOWN = str.maketrans({c: "\\" + c for c in "\\`*_{}[]<>()#+-.!|~$"})


def caveat_box(lines: list[str]) -> None:
    """The page's caveats — what may make a figure mislead, input lost first — each said once,
    in one folded box, a line each (not a warning box per caveat over the page)."""
    lines = list(dict.fromkeys(lines))
    if lines:
        label = f"{CAVEATS}: {len(lines)} — figures that may mislead"
        with st.expander(label, icon=":material/warning:"):
            st.markdown("\n".join(f"- {line.translate(_MARKDOWN)}" for line in lines))


def run_caveats(job: Job) -> list[str]:
    """A run's caveats: its traces that could not be read, the ranks its record lists but no
    trace gave, then each note that input was lost or a figure may mislead, once, with the
    ranks it holds for."""
    # The run's traces that could not be read come first: the pages draw the others.
    lines = [f"not read: {failure.message}" for failure in job.failures]
    if job.run is not None and len(job.ranks) < job.run.world_size:
        found = sorted(r.rank for r in job.ranks if r.rank is not None)
        lines.append(
            f"run.json lists {job.run.world_size} ranks but traces of only {len(job.ranks)} "
            f"were read (ranks {found}): cross-rank numbers cover those alone"
        )
    ranks: dict[str, list[str]] = {}
    for r in sorted(job.ranks, key=lambda r: not any(n.lossy for n in r.notes)):
        for note in r.notes:
            if note.lossy or note.caveat:
                ranks.setdefault(note.message, []).append(rank_label(r.rank))
    lines += [f"{', '.join(who)}: {message}" for message, who in ranks.items()]
    return lines


PAGE_ROWS = 50  # a table longer than this is shown a page at a time


def table(frame: pl.DataFrame, columns: Mapping[str, tuple[str, str | None]]) -> None:
    """A table as people read it (`frames.readable`), every row in view: up to PAGE_ROWS at
    once, longer ones a page at a time — never a small box to scroll."""
    pages = -(-frame.height // PAGE_ROWS)
    if pages > 1:  # only the page shown is formatted and sent
        key = "page of " + ",".join(frame.columns)
        page = st.number_input(f"page (of {pages}; {frame.height:,} rows)", 1, pages, 1, key=key)
        frame = frame.slice((int(page) - 1) * PAGE_ROWS, PAGE_ROWS)
    st.dataframe(readable(frame, columns), hide_index=True, height="content")


def best_first(runs: pl.DataFrame) -> list[str]:
    """The runs found, the one to open on first: a readable record before a broken one, all
    the ranks its record names before some, then the most rank traces
    (docs/commands/dashboard.md)."""
    order = runs.with_row_index("at").sort(
        pl.col("problem").is_not_null(),
        pl.col("dp").is_not_null() & (pl.col("traces") < pl.col("dp")),
        -pl.col("traces"),
        "at",
    )
    return order["run"].to_list()


def run_names(runs: pl.DataFrame) -> tuple[list[str], int]:
    """Every run a page can show (those found, then this session's uploads) and the one chosen
    now: the last chosen on any page, else the best (best_first) — the same on every page."""
    uploads: dict[str, Job] = st.session_state.get(UPLOADS, {})
    names = runs["run"].to_list() + list(uploads)
    chosen = st.session_state.get("run")
    if chosen in names:
        return names, names.index(chosen)
    return names, names.index(best_first(runs)[0]) if runs.height else 0


def pick_run(label: str = "run") -> tuple[str, Job] | None:
    runs = guarded("Runs", lambda: data.discover_runs(str(data.root())))
    if runs is None:
        return None
    uploads: dict[str, Job] = st.session_state.get(UPLOADS, {})
    if runs.height == 0 and not uploads:
        st.warning(f"No traces under {data.root()}. Start the dashboard on a run or sweep folder.")
        return None
    names, index = run_names(runs)
    if st.session_state.get("run") not in names:  # none chosen yet: the best run that loads
        ready = next((name for name in best_first(runs) if loaded_run(name)), None)
        index = names.index(ready) if ready is not None else index
    failed_box(runs)
    choice = st.sidebar.selectbox(label, names, index=index)
    st.session_state["run"] = choice
    job = uploads.get(choice) or loaded_run(choice)
    if job is None:
        st.error(st.session_state[FAILED][choice])
        return None
    caveat_box(run_caveats(job))
    return choice, job


def overview_map(job: Job, measure: str) -> int | None:
    """A job of many ranks: every rank's `measure` per step (overview.MEASURES) as a heat map;
    the position of the rank whose cell was clicked, if one was."""
    cells = overview.heat_cells(
        overview.rank_step_frame(job), len(job.ranks), overview.MEASURES[measure]
    )
    if cells.height == 0:
        st.info(f"No rank has a {measure} to show.")
        return None
    event = st.altair_chart(
        overview.heat_map_chart(cells, len(job.ranks), measure),
        width="stretch",
        on_select="rerun",
        key=f"overview of {measure} · {job.name}",  # a click on one run's is not another's
    )
    clicked = (event.selection.get(overview.CLICKED) or []) if event else []
    return int(clicked[0]["shown"]) if clicked and "shown" in clicked[0] else None


def pick_ranks(job: Job, key: str, default: list[int], clicked: int | None = None) -> list[int]:
    """The ranks (positions in job.ranks) a page draws in full, chosen in the sidebar: every rank
    of a small job; of a larger one `default` first, and each rank clicked in the overview."""
    if not overview.many_ranks(job):
        return list(range(len(job.ranks)))
    key = f"ranks · {key}"
    positions = range(len(job.ranks))
    if key not in st.session_state:
        st.session_state[key] = default
    if clicked not in positions:
        clicked = None
    if clicked is not None and st.session_state.get(f"{key} · clicked") != clicked:
        st.session_state[f"{key} · clicked"] = clicked  # added once, and can be removed again
        st.session_state[key] = list(dict.fromkeys([*st.session_state[key], clicked]))
    st.session_state[key] = [at for at in st.session_state[key] if at in positions]
    labels = [rank_label(r.rank) for r in job.ranks]
    return st.sidebar.multiselect(
        "ranks drawn", list(positions), key=key, format_func=labels.__getitem__
    )
