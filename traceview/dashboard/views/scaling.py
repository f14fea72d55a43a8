import polars as pl
import streamlit as st

from traceview import NO_FINDINGS, Runs
from traceview.dashboard import data
from traceview.dashboard.ui import caveat_box, failed_box, guarded, loaded_run, table
from traceview.dashboard.whatif_panel import names_of, what_if_panel
from traceview.documents.words import SCALING_LEGEND
from traceview.presentation import charts
from traceview.presentation.frames import (
    CHECKED_NOTE,
    NEEDS_A_RECORD,
    NO_STEPS,
    SCALING_COLUMNS,
    THEORY_COLUMNS,
    caveat_lines,
    checked_lines,
    prediction_frame,
    scaling_frame,
    withheld_lines,
)

st.title("Scaling")
runs = guarded("Runs", lambda: data.discover_runs(str(data.root())))
if runs is not None and runs.height:
    loaded = [loaded_run(run) for run in runs["run"]]
    failed_box(runs)  # each run that could not be read, once, beside the page
    jobs = Runs(jobs=tuple(job for job in loaded if job is not None))
    base = str(data.root())
    scaling = scaling_frame(jobs)
    if scaling.height:
        scaling = scaling.with_columns(pl.col("job").str.strip_prefix(base).str.strip_prefix("/"))
    caveat_box(caveat_lines(jobs, root=base))
    found = guarded("Findings", jobs.findings)
    if found:
        # Above the charts, but folded when there are many: the charts stay in view.
        with st.expander(f"Findings: {len(found)} to look at", expanded=len(found) <= 3):
            st.markdown(
                "\n".join(
                    f"- **{f.job.removeprefix(base).lstrip('/') or f.job}** · {f.what}  \n"
                    f"  → {f.action}"
                    for f in found
                )
            )
    elif found is not None:
        st.info(NO_FINDINGS)
    measured = scaling.filter(pl.col("efficiency").is_not_null()) if scaling.height else scaling
    if measured.height:
        st.altair_chart(charts.efficiency_chart(measured, prediction_frame(jobs)), width="stretch")
        st.caption(
            "Measured: E(N) = throughput(N) / (N × throughput(1)), from each run's median step "
            "time. Predicted (dashed): from the least noisy multi-rank run, communication grows "
            "with the collective's bus factor at the measured bandwidth, as much of it stays "
            "hidden as there, the rest adds to the step."
            + "".join(f" {line.capitalize()}." for line in withheld_lines(jobs))
        )
        if checked := checked_lines(jobs):
            st.subheader("Predictions checked against measured runs")
            st.markdown("\n".join(f"- {line}" for line in checked))
            st.caption(CHECKED_NOTE)
        left, right = st.columns(2)
        left.altair_chart(charts.throughput_chart(measured), width="stretch")
        right.altair_chart(charts.exposed_chart(scaling), width="stretch")
    elif scaling.height:
        st.caption(NEEDS_A_RECORD)
        timed = scaling.filter(pl.col("step_seconds").is_not_null())
        left, right = st.columns(2)
        if timed.height:
            left.altair_chart(charts.step_time_chart(timed), width="stretch")
        exposed = scaling.filter(pl.col("exposed_comm_fraction").is_not_null())
        if exposed.height:
            right.altair_chart(charts.exposed_chart(exposed, by_run=True), width="stretch")
        if not timed.height and not exposed.height:
            st.info(NO_STEPS)
    guarded("What if", lambda: what_if_panel(jobs, names_of(jobs, base)))
    if scaling.height:
        st.subheader("Step time and efficiency")
        table(scaling, SCALING_COLUMNS)
        st.subheader("Traffic and memory against the ZeRO theory")
        table(scaling, THEORY_COLUMNS)
        st.caption("  \n".join(f"`{name}`: {said}" for name, said in SCALING_LEGEND))
