from functools import partial

import streamlit as st

from traceview.dashboard import MAX_UPLOAD_MB, data, upload
from traceview.dashboard.ui import caveat_box, guarded, run_caveats, run_names, table
from traceview.plain import UNKNOWN
from traceview.presentation.frames import rank_label

RUNS_COLUMNS = {
    "run": ("run", None),
    "strategy": ("strategy", None),
    "dp": ("DP", "{:d}"),
    "traces": ("rank traces", "{:d}"),
    "preset": ("model", None),
    "samples_per_s": ("samples/s", "{:,.1f}"),
    "problem": ("problem", None),
}

st.title("Runs")
runs = guarded("Runs", lambda: data.discover_runs(str(data.root())))
if runs is not None:
    st.caption(f"Runs found under {data.root()}; choose one for the other pages.")
    table(runs, RUNS_COLUMNS)
    names, index = run_names(runs)
    if names:
        st.session_state["run"] = st.selectbox("run", names, index=index)

st.subheader("Upload a trace")
uploaded = st.file_uploader(
    f"a profiler trace (.json or .json.gz, up to {MAX_UPLOAD_MB} MB, "
    f"{upload.MAX_EXPANDED_MB:,} MB inflated)",
    type=["json", "gz"],
    on_change=upload.let_go,  # removed, or replaced by the next: its analysis goes
)
if uploaded is not None:
    name = f"upload: {uploaded.name}"
    job = st.session_state.get(upload.UPLOADS, {}).get(name)
    if job is None:
        job = guarded(uploaded.name, partial(upload.load_upload, uploaded.name, uploaded.getvalue))
    report = job.ranks[0] if job else None
    if job is not None:
        # Every page can show it now: it is a run of this session, chosen in the sidebar.
        upload.keep(name, job)
        st.session_state["run"] = name
        st.success(f"{uploaded.name} is the run '{name}' on every page now (sidebar).")
        if report and report.total:
            t = report.total
            of = "" if report.world_size is None else f" of {report.world_size}"
            st.write(f"{rank_label(report.rank)}{of} · {report.mode}")
            cols = st.columns(4)
            for col, (label, value) in zip(
                cols,
                [
                    ("compute ms", t.compute_ns),
                    ("comm ms", t.comm_ns),
                    ("exposed ms", t.exposed_comm_ns),
                ],
                strict=False,
            ):
                col.metric(label, UNKNOWN if value is None else f"{value / 1e6:,.3f}")
            cols[3].metric("overlap", UNKNOWN if t.overlap_pct is None else f"{t.overlap_pct:.1f}%")
            caveat_box(run_caveats(job))
