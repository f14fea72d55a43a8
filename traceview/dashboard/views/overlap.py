import polars as pl
import streamlit as st

from traceview.dashboard.ui import overview_map, pick_ranks, pick_run, table
from traceview.presentation import charts, critical_path, overview, stragglers
from traceview.presentation.desync import desync_words
from traceview.presentation.frames import overlap_frame
from traceview.presentation.overlap_tax import TAX_COLUMNS, tax_frame, tax_words

OVERLAP_COLUMNS = {
    "rank": ("rank", "{:d}"),
    "step": ("step", "{:d}"),
    "compute only": ("compute only ms", "{:,.3f}"),
    "overlap": ("overlap ms", "{:,.3f}"),
    "exposed comm": ("exposed comm ms", "{:,.3f}"),
    "idle": ("idle ms", "{:,.3f}"),
}

st.title("Overlap")
picked = pick_run()
if picked:
    run, job = picked
    frame = overlap_frame(job)
    if frame.height == 0:
        st.info("No profiler steps in this run.")
    else:
        many = overview.many_ranks(job)
        clicked = None
        if many:
            measures = list(overview.MEASURES)
            measure = st.sidebar.radio("overview", measures, index=len(measures) - 1)
            clicked = overview_map(job, measure)
        chosen = pick_ranks(job, f"overlap · {run}", overview.default_ranks(job), clicked)
        ranks = [job.ranks[at].rank for at in chosen]
        drawn = frame.filter(pl.col("rank").is_in(ranks)) if many else frame
        drawn, per_bar = overview.binned_steps(drawn)
        if drawn.height:
            st.altair_chart(charts.overlap_chart(drawn), width="stretch")
        st.caption(
            (
                f"Of {len(job.ranks)} ranks, the slowest, the median and the fastest (by their "
                "median step) are drawn first; click a cell of the overview, or choose in the "
                "sidebar, to draw others; the table holds every rank. "
                if many
                else ""
            )
            + (
                f"Each bar is the mean of {per_bar} consecutive steps (too many to draw one "
                "by one; the table holds each). "
                if per_bar > 1
                else ""
            )
            + "A step's window in four parts: compute alone, compute overlapping "
            "communication, communication exposed, and idle (definitions in docs/metrics.md)."
        )
        table(frame.pivot(on="part", index=["rank", "step"], values="ms"), OVERLAP_COLUMNS)
        taxed = tax_words(job)
        if taxed is not None:
            st.subheader("The overlap tax: compute slowed beside communication")
            st.caption(taxed[0].upper() + taxed[1:] + ".")
            taxes = tax_frame(job)
            if len(job.ranks) > 1 and taxes["pairs"].sum():
                table(taxes, TAX_COLUMNS)
        waited_for = stragglers.of(job)
        if waited_for is not None:
            st.subheader("Who the ranks waited for")
            points, per_point = stragglers.straggler_frame(waited_for)
            st.caption(stragglers.said(waited_for) + stragglers.binned_words(per_point))
            if points.height:
                st.altair_chart(stragglers.straggler_chart(points), width="stretch")
        checked = desync_words(job)
        if checked is not None:
            st.subheader("Do the ranks' collectives line up?")
            summary, signs = checked
            st.caption(summary)
            if signs:
                st.markdown("\n".join(f"- {s}" for s in signs))
        path = critical_path.of(job)
        if path is not None:
            st.subheader("What set each step's end: the critical path")
            if isinstance(path, str):
                st.caption(path + ".")
            else:
                st.caption(critical_path.said(path))
            if not isinstance(path, str) and path.found:
                st.altair_chart(
                    critical_path.totals_chart(critical_path.totals_frame(path)), width="stretch"
                )
                by_time = sorted(path.steps, key=lambda s: s.step_us, reverse=True)
                step = st.selectbox(
                    "step (slowest first)",
                    by_time,
                    format_func=lambda s: f"step {s.step}: {s.step_us / 1000:,.3f} ms",
                    key=f"path step · {run}",
                )
                st.altair_chart(
                    critical_path.step_chart(critical_path.step_frame(step)), width="stretch"
                )
