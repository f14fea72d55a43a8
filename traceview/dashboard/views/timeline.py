import streamlit as st

from traceview.dashboard import charts
from traceview.dashboard.lanes import row_order, timeline_frame
from traceview.dashboard.ui import pick_run

st.title("Timeline")
picked = pick_run()
if picked:
    run, job = picked
    steps = sorted({s.step for r in job.ranks for s in r.steps})
    if not steps:
        st.info("This run has no profiler steps to show.")
    else:
        step = st.sidebar.selectbox("step", steps)
        frame, joined = timeline_frame(job, step)
        st.altair_chart(charts.timeline_chart(frame, row_order(frame)), width="stretch")
        st.caption(
            "Per rank: its overlap and exposed-communication tracks, its collectives (waiting "
            "for the last rank to arrive, then transfer, where the ranks' clocks are aligned), "
            "and its lanes named by what they do. Drag to pan, scroll to zoom."
            + (
                " Work closer together than one pixel is drawn as one bar (hover says how "
                "many); `traceview export` writes every interval for Perfetto."
                if joined
                else ""
            )
        )
