import streamlit as st

from traceview.dashboard import charts
from traceview.dashboard.frames import overlap_frame
from traceview.dashboard.ui import pick_run

st.title("Overlap")
picked = pick_run()
if picked:
    run, job = picked
    frame = overlap_frame(job)
    if frame.height == 0:
        st.info("No profiler steps in this run.")
    else:
        st.altair_chart(charts.overlap_chart(frame), width="content")
        st.caption(
            "Each bar is one step's window: compute alone, compute overlapping "
            "communication, communication exposed, and idle (definitions in the README)."
        )
        st.dataframe(frame.pivot(on="part", index=["rank", "step"], values="ms"), hide_index=True)
