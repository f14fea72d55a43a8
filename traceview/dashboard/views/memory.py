import typing

import streamlit as st

import traceview
from traceview.dashboard import charts
from traceview.dashboard.frames import memory_frame
from traceview.dashboard.ui import pick_run

st.title("Memory")
picked = pick_run()
if picked:
    run, job = picked
    frame = memory_frame(job)
    if frame.height == 0:
        st.info("Model-state memory comes from the harness's run.json; this run has none.")
    else:
        st.altair_chart(charts.memory_chart(frame), width="content")
        run_precision = frame["precision"][0]
        layout = frame["as_run_mb"].is_not_null().any()
        st.caption(
            "Measured: bytes each rank holds per category, at its largest over a step. "
            f"Theory: the textbook ZeRO formula for AdamW in {run_precision} precision."
            + (
                " As run: the layout this strategy's implementation holds (docs/harness.md, "
                "Memory theory) — the one the measurement should match."
                if layout
                else ""
            )
        )

st.subheader("Calculator")
cols = st.columns(4)
params = cols[0].number_input("parameters (millions)", min_value=1.0, value=1000.0, step=100.0)
ranks = cols[1].number_input("DP degree", min_value=1, value=8, step=1)
precision = cols[2].selectbox("precision", typing.get_args(traceview.Precision))
stage = cols[3].selectbox(
    "strategy", list(traceview.STRATEGIES), format_func=lambda s: traceview.STRATEGIES[s].title
)
states = traceview.model_state_bytes(stage, int(params * 1e6), int(ranks), precision)
if states:
    total = sum(states.values())
    st.metric("model states per rank", f"{total / 2**30:,.2f} GiB")
    st.table(
        {
            "state": list(states),
            "GiB per rank": [f"{v / 2**30:,.2f}" for v in states.values()],
            "share": [f"{100 * v / total:.0f}%" for v in states.values()],
        }
    )
