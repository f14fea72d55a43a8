import polars as pl
import streamlit as st

from traceview.dashboard.ui import pick_ranks, pick_run, table
from traceview.presentation import charts, overview, spread
from traceview.presentation.frames import calls_frame, link_words

CALL_COLUMNS = {
    "rank": ("rank", "{:d}"),
    "step": ("step", "{:d}"),
    "label": ("bucket or module", None),
    "collective": ("collective", None),
    "size": ("size", None),
    "duration_ms": ("duration ms", "{:,.3f}"),
    "wait_ms": ("waiting ms", "{:,.3f}"),
    "exposed_ms": ("exposed ms", "{:,.3f}"),
    "busbw_said": ("bus bandwidth GB/s", None),
}

PEAK_COLUMNS = {
    "collective": ("collective", None),
    "bytes": ("size bytes", "{:,d}"),
    "calls": ("calls", "{:d}"),
    "busbw_gbps": ("bus bandwidth GB/s (median)", "{:,.2f}"),
    "peak_pct": ("% of the link's peak", "{:.1f}"),
    "lower_bound": ("a lower bound", None),
}

st.title("Buckets and collectives")
picked = pick_run()
if picked:
    run, job = picked
    calls = calls_frame(job)
    if calls.height == 0:
        st.info("No communication in this run (a single rank, or no collectives traced).")
    else:
        steps = sorted(calls["step"].drop_nulls().unique().to_list())
        step = st.sidebar.selectbox("step", steps) if steps else None
        many = overview.many_ranks(job)
        chosen = pick_ranks(job, f"buckets · {run} · {step}", overview.default_ranks(job, step))
        ranks = [job.ranks[at].rank for at in chosen]
        of_step = calls_frame(job, step)
        of_step = of_step.filter(pl.col("rank").is_in(ranks)) if many else of_step
        if of_step.height:
            st.altair_chart(charts.bucket_timeline_chart(of_step), width="stretch")
        if many:
            st.caption(
                f"Of {len(job.ranks)} ranks, the slowest, the median and the fastest at this "
                "step are drawn (others: the sidebar); the table holds every rank's calls."
            )
        if calls["mb"].drop_nulls().len():
            st.altair_chart(spread.size_chart(calls), width="stretch")
        for fit in job.fits:
            st.write(f"**{fit.collective}**: {fit.advice}")
        link, why = job.link
        st.write(link_words(link, why, capital=True))
        peak = job.against_peak()
        if peak.height:
            table(peak, PEAK_COLUMNS)
        table(calls, CALL_COLUMNS)
        st.caption(
            "busbw: bus bandwidth as nccl-tests defines it, on the transfer after the last rank "
            "arrived; ≥ where it is on the call's whole duration, waiting included (ranks not "
            "aligned): a lower bound (docs/metrics.md)."
        )
