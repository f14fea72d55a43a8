from functools import partial

import polars as pl
import streamlit as st

from traceview import NO_FINDINGS, Runs
from traceview.dashboard import charts, data
from traceview.dashboard.frames import (
    SCALING_COLUMNS,
    caveat_lines,
    prediction_frame,
    readable,
    scaling_frame,
    withheld_lines,
)
from traceview.dashboard.ui import caveat_box, guarded

st.title("Scaling")
runs = guarded("Runs", lambda: data.discover_runs(str(data.root())))
if runs is not None and runs.height:
    loaded = [guarded(run, partial(data.job_for, run)) for run in runs["run"]]
    jobs = Runs(jobs=tuple(job for job in loaded if job is not None))
    scaling = scaling_frame(jobs)
    base = str(data.root())
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
    if measured.height == 0:
        st.info(
            "Efficiency needs a DP-1 run of the same strategy beside the larger ones "
            "(and run records, or traces with steps)."
        )
    else:
        st.altair_chart(charts.efficiency_chart(measured, prediction_frame(jobs)), width="stretch")
        st.caption(
            "Measured: E(N) = throughput(N) / (N × throughput(1)), from each run's median step "
            "time. Predicted (dashed): from the "
            "largest measured run, communication grows with the collective's bus factor at the "
            "measured bandwidth, as much of it stays hidden as there, the rest adds to the step."
            + "".join(f" {line.capitalize()}." for line in withheld_lines(jobs))
        )
        left, right = st.columns(2)
        left.altair_chart(charts.throughput_chart(measured), width="stretch")
        right.altair_chart(charts.exposed_chart(scaling), width="stretch")
    if scaling.height:
        shown = scaling.with_columns(pl.col("job").str.strip_prefix(base).str.strip_prefix("/"))
        st.dataframe(readable(shown, SCALING_COLUMNS), hide_index=True)
