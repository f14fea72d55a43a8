"""The Scaling page's what-if panel: a run's step time, throughput and E(N) at another DP degree,
link bandwidth, share of communication hidden and bucket size, from the simulator calibrated on
that run (docs/metrics.md "What-if")."""

from __future__ import annotations

import altair as alt
import polars as pl
import streamlit as st

from traceview import Runs
from traceview.plain import UNKNOWN
from traceview.presentation.charts import FULL_WIDTH, AnyChart

DEGREES = [2**k for k in range(11)]  # 1 … 1,024
MB = 1e6


def names_of(runs: Runs, root: str) -> dict[str, str]:
    """Each job's name relative to the dashboard's folder, as the page's tables give it."""
    return {j.name: j.name.removeprefix(root).lstrip("/") or j.name for j in runs.jobs}


def what_if_panel(runs: Runs, names: dict[str, str]) -> None:
    """`names`: each job's name as the page shows it."""
    calibrated = {names[j.name]: w for j in runs.jobs if (w := runs.what_if(j)) is not None}
    if not calibrated:
        return
    st.subheader("What if")
    run = st.selectbox("starting from the run", list(calibrated), key="whatif run")
    what = calibrated[run]
    left, mid, right, last = st.columns(4)
    degrees = sorted({*DEGREES, what.dp})
    dp = left.select_slider("DP degree", degrees, value=what.dp, key=f"whatif dp {run}")
    busbw = mid.number_input(
        "link bandwidth (bus bandwidth, busbw, GB/s)", min_value=1e-3, value=float(what.busbw_gbps),
        format="%.3f", key=f"whatif bw {run}",
    )  # fmt: skip
    hidden = right.slider(
        "communication hidden (% of the run's)", 0.0, 100.0, 100 * what.hidden_share, step=0.5,
        format="%.1f", key=f"whatif hidden {run}",
    )  # fmt: skip
    bucket = None
    if what.bucket_bytes is not None:
        bucket = last.number_input(
            "bucket size (MB)", min_value=0.001, value=what.bucket_bytes / MB, format="%.3f",
            key=f"whatif bucket {run}",
        ) * MB  # fmt: skip
    settings = {"busbw_gbps": busbw, "hidden_share": hidden / 100, "bucket_bytes": bucket}
    found = what.simulate(int(dp), **settings)
    measured = what.simulate(what.dp)
    a, b, c = st.columns(3)
    change = (found.step_seconds - measured.step_seconds) * 1e3
    # A change that rounds to nothing gets no arrow and no colour (Streamlit colours "+0.0").
    moved = f"{change:+,.1f} ms" if round(change, 1) != 0 else None
    a.metric("step time", f"{found.step_seconds * 1e3:,.1f} ms", moved, delta_color="inverse",
             help="against the run as measured")  # fmt: skip
    b.metric(
        "throughput",
        UNKNOWN if found.samples_per_s is None else f"{found.samples_per_s:,.1f} samples/s",
    )
    c.metric("E(N)", UNKNOWN if found.efficiency is None else f"{found.efficiency:.2f}")
    curve = pl.DataFrame(
        [
            {"dp": n, "step_ms": w.step_seconds * 1e3, "efficiency": w.efficiency}
            for n in DEGREES
            for w in [what.simulate(n, **settings)]
        ]
    )
    st.altair_chart(_curve_chart(curve, int(dp)), width="stretch")
    latency = "" if what.latency_known else (
        " No α-β fit (call time against size) of this run is trusted, so no latency per "
        "message is known: the bucket size changes nothing here."
    )  # fmt: skip
    st.caption(
        f"Starts from {run} as measured (DP {what.dp}: {measured.step_seconds * 1e3:,.1f} ms a "
        f"step, {what.busbw_gbps:,.3f} GB/s, {100 * what.hidden_share:.0f}% of its communication "
        "hidden). Each collective's messages cost a fixed α + bus factor(N) × bytes ÷ busbw "
        "(docs/glossary.md); as much "
        "communication stays hidden as the share set of the run's; compute and idle time stay "
        "as measured (docs/metrics.md, “What-if”)." + latency
    )


def _curve_chart(curve: pl.DataFrame, dp: int) -> AnyChart:
    x = alt.X("dp:Q", title="DP degree", scale=alt.Scale(type="log", base=2),
              axis=alt.Axis(values=DEGREES, format="d"))  # fmt: skip
    line = alt.Chart(curve).mark_line(point=True).encode(
        x=x,
        y=alt.Y("step_ms:Q", title="step time ms (predicted)"),
        tooltip=[alt.Tooltip("dp:Q", format="d"), alt.Tooltip("step_ms:Q", format=",.1f"),
                 alt.Tooltip("efficiency:Q", format=".2f", title="E(N)")],
    )  # fmt: skip
    chosen = alt.Chart(pl.DataFrame({"dp": [dp]})).mark_rule(strokeDash=[4, 4]).encode(x=x)
    return alt.layer(line, chosen).properties(**FULL_WIDTH, height=220)
