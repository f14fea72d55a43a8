import typing

import polars as pl
import streamlit as st

import traceview
from traceview.dashboard.ui import pick_run
from traceview.presentation import charts, overview
from traceview.presentation.frames import memory_frame, rank_label, size_unit

st.title("Memory")
picked = pick_run()
job = picked[1] if picked else None
frame = memory_frame(job) if job else None
run = job.run if job else None
# The calculator starts from the chosen run: its Ψ, precision, DP degree and strategy.
psi = max(run.num_params, 1_000) if run else 1_000_000_000  # within the inputs' bounds
dp = max(run.world_size, 1) if run else 8
precision: traceview.Precision = (
    frame["precision"][0] if frame is not None and frame.height else None
) or "fp32"
# One unit on the page, the chart's and the calculator's: from the chosen run's model states.
states_of_run = traceview.model_state_bytes("ddp", psi, 1, precision) or {}
unit = size_unit(float(sum(states_of_run.values())))
if frame is not None:
    if frame.height == 0:
        st.info("Model-state memory comes from the harness's run.json; this run has none.")
    else:
        held = overview.ranks_by_memory(frame)
        many = len(held) > overview.SHOWN_AT_ONCE
        if many:  # the largest, the median and the smallest first
            shown = st.sidebar.multiselect(
                "ranks drawn",
                sorted(held),
                default=overview.ends_and_middle(held),
                format_func=rank_label,
            )
            frame = frame.filter(pl.col("rank").is_in(shown))
        if frame.height:
            st.altair_chart(charts.memory_chart(frame, unit), width="stretch")
        layout = frame["as_run_mb"].is_not_null().any()
        st.caption(
            (
                f"Of {len(held)} ranks, the one holding the most, the median and the least "
                "are drawn (others: the sidebar). "
                if many
                else ""
            )
            + "Measured: bytes each rank holds per category, at its largest over a step. "
            f"ZeRO theory: the textbook formula for AdamW in {precision} precision."
            + (
                " As run: the layout this strategy's implementation holds (docs/harness.md, "
                "Memory theory) — the one the measurement should match."
                if layout
                else ""
            )
        )

st.subheader("Calculator")
st.caption(
    "Model states per rank by the ZeRO paper's formulas"
    + (f", starting from {picked[0]}." if picked and run else ".")
)
cols = st.columns(4)
params = cols[0].number_input(
    "parameters (millions)", min_value=0.001, value=psi / 1e6, step=100.0, format="%.3f"
)
ranks = cols[1].number_input("DP degree", min_value=1, value=dp, step=1)
precisions = list(typing.get_args(traceview.Precision))
chosen_precision = cols[2].selectbox("precision", precisions, index=precisions.index(precision))
strategies = list(traceview.STRATEGIES)
stage = cols[3].selectbox(
    "strategy",
    strategies,
    index=strategies.index(run.strategy) if run and run.strategy in strategies else 0,
    format_func=lambda s: traceview.STRATEGIES[s].title,
)
states = traceview.model_state_bytes(stage, int(params * 1e6), int(ranks), chosen_precision)
if states:
    name, scale = unit
    total = sum(states.values())
    st.metric("model states per rank", f"{total / scale:,.2f} {name}")
    st.table(
        {
            "state": list(states),
            f"{name} per rank": [f"{v / scale:,.2f}" for v in states.values()],
            "share": [f"{100 * v / total:.0f}%" for v in states.values()],
        }
    )
