import streamlit as st

from traceview.dashboard import charts
from traceview.dashboard.frames import overlap_frame
from traceview.dashboard.ui import pick_run, table

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
        st.altair_chart(charts.overlap_chart(frame), width="stretch")
        st.caption(
            "Each bar is one step's window: compute alone, compute overlapping "
            "communication, communication exposed, and idle (definitions in docs/metrics.md)."
        )
        table(frame.pivot(on="part", index=["rank", "step"], values="ms"), OVERLAP_COLUMNS)
