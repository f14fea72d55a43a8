import streamlit as st

from traceview.dashboard import charts
from traceview.dashboard.frames import timeline_frame
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
        frame, merged = timeline_frame(job, step)
        if merged:
            st.info(
                "Many intervals: touching intervals of each lane and kind are merged. "
                "Export the full timeline with `traceview export` for Perfetto."
            )
        st.altair_chart(charts.timeline_chart(frame), width="stretch")
        st.caption(
            "Per rank: compute, communication and memory lanes; 'overlap' marks "
            "communication hidden behind compute, 'exposed comm' the rest. Drag to pan, "
            "scroll to zoom."
        )
