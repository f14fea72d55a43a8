import streamlit as st

from traceview.dashboard.ui import guarded, overview_map, pick_ranks, pick_run
from traceview.presentation import charts, overview
from traceview.presentation.lanes import row_order, timeline_frame

st.title("Timeline")
picked = pick_run()
if picked:
    run, job = picked
    steps = sorted({s.step for r in job.ranks for s in r.steps})
    if not steps:
        st.info("This run has no profiler steps to show.")
    else:
        step = st.sidebar.selectbox("step", steps)
        many = overview.many_ranks(job)
        clicked = None
        if many:
            measure = st.sidebar.radio("overview", list(overview.MEASURES))
            clicked = overview_map(job, measure)
        # Only the chosen ranks' intervals are read: a job of many ranks shows a few first.
        chosen = pick_ranks(job, f"timeline · {run} · {step}", overview.default_ranks(job, step),
                            clicked)  # fmt: skip
        drawn = guarded(run, lambda: timeline_frame(job, step, ranks=chosen)) if chosen else None
        if not chosen:
            st.info("Choose the ranks to draw in the sidebar, or click a cell above.")
        elif drawn is not None:
            frame, joined = drawn
            st.altair_chart(charts.timeline_chart(frame, row_order(frame)), width="stretch")
            shown = (
                f"Of {len(job.ranks)} ranks, the slowest, the median and the fastest at this "
                "step (by its window) are drawn first; click a cell of the overview, or choose "
                "in the sidebar, to draw others. "
                if many
                else ""
            )
            st.caption(
                shown + "Per rank: its overlap and exposed-communication tracks, its collectives "
                "(waiting for the last rank to arrive, then transfer, where the ranks' clocks "
                "are aligned), and its lanes named by what they do. Drag to pan, scroll to zoom."
                + (
                    " Work closer together than one pixel is drawn as one bar (hover says how "
                    "many); `traceview export` writes every interval for Perfetto."
                    if joined
                    else ""
                )
            )
