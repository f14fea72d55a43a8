from functools import partial

import polars as pl
import streamlit as st

from traceview.analysis.frames import scaling_frame
from traceview.analysis.prediction import predict_jobs
from traceview.dashboard import charts, data
from traceview.dashboard.ui import guarded

st.title("Scaling")
runs = guarded("Runs", lambda: data.discover_runs(str(data.root())))
if runs is not None and runs.height:
    loaded = [guarded(run, partial(data.job_for, run)) for run in runs["run"]]
    jobs = [job for job in loaded if job is not None]
    scaling = scaling_frame(jobs)
    base = str(data.root())
    caveats = scaling.select("job", "caveats").drop_nulls() if scaling.height else scaling
    for job, caveat in caveats.iter_rows():
        st.warning(f"{job.removeprefix(base).lstrip('/')}: {caveat}")
    measured = scaling.filter(pl.col("efficiency").is_not_null()) if scaling.height else scaling
    if measured.height == 0:
        st.info(
            "Efficiency needs a DP-1 run of the same strategy beside the larger ones "
            "(and run records, or traces with steps)."
        )
    else:
        predicted = predict_jobs(jobs)
        pred = pl.DataFrame([p.__dict__ for p in predicted]) if predicted else None
        st.altair_chart(charts.efficiency_chart(measured, pred), width="stretch")
        st.caption(
            "Measured: E(N) = throughput(N) / (N × throughput(1)), from each run's median step "
            "time. Predicted (dashed): from the "
            "largest measured run, communication grows with the collective's bus factor at the "
            "measured bandwidth, as much of it stays hidden as there, the rest adds to the step."
        )
        left, right = st.columns(2)
        left.altair_chart(charts.throughput_chart(measured), width="stretch")
        right.altair_chart(charts.exposed_chart(scaling), width="stretch")
    shown = scaling.with_columns(pl.col("job").str.strip_prefix(base).str.strip_prefix("/"))
    st.dataframe(shown, hide_index=True)
