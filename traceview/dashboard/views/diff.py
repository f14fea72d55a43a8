from functools import partial

import altair as alt
import polars as pl
import streamlit as st

from traceview import Job, Runs
from traceview.dashboard import data
from traceview.dashboard.ui import guarded, table
from traceview.documents import structs as d
from traceview.documents.diff import diff
from traceview.documents.steps import parse_steps
from traceview.plain import UNKNOWN, counted
from traceview.presentation import charts
from traceview.presentation.charts import FULL_WIDTH

CHANGE_COLUMNS = {
    "what": ("", None),
    "before": ("A", "{:,.3f}"),
    "after": ("B", "{:,.3f}"),
    "change": ("B − A", "{:+,.3f}"),
    "judged": ("judged", None),
}
CALLS_COLUMNS = {
    "name": ("", None),
    "calls": ("calls A → B", None),
    "megabytes": ("MB A → B", None),
    "duration_ms": ("ms A → B", None),
    "exposed_ms": ("exposed ms A → B", None),
}


def changes(items: list[d.ChangeJson]) -> pl.DataFrame:
    judged = {True: "within noise", False: "beyond noise", None: UNKNOWN}
    return pl.DataFrame(
        [{"what": c.what, "before": c.before, "after": c.after, "change": c.change,
          "judged": judged[c.within_noise]} for c in items],
        schema={"what": pl.String, "before": pl.Float64, "after": pl.Float64,
                "change": pl.Float64, "judged": pl.String},
    )  # fmt: skip


def calls(items: list[d.CallsChangeJson]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"name": c.name, **{f: f"{getattr(c, f).before:,.2f} → {getattr(c, f).after:,.2f}"
                             for f in ("calls", "megabytes", "duration_ms", "exposed_ms")}}
         for c in items],
        schema={k: pl.String for k in CALLS_COLUMNS},
    )  # fmt: skip


def show(doc: d.DiffDocument) -> None:
    parts = changes(doc.parts)
    st.altair_chart(
        alt.Chart(parts).mark_bar().encode(
            x=alt.X("change:Q", title="B − A, ms per rank and step"),
            y=alt.Y("what:N", title=None, sort=None, axis=charts.NAME_AXIS),
            tooltip=[alt.Tooltip("what:N", title="part"),
                     alt.Tooltip("change:Q", title="B − A ms", format=",.3f"), "judged:N"],
            color=alt.Color("judged:N", title=None,
                            scale=alt.Scale(domain=["within noise", "beyond noise", UNKNOWN],
                                            range=["#bab0ac", "#e45756", "#9d9d9d"])),
        ).properties(**FULL_WIDTH, height=120),
        width="stretch",
    )  # fmt: skip
    table(changes([doc.step_ms, *doc.parts]), CHANGE_COLUMNS)
    st.caption(
        f"A: {doc.before}; B: {doc.after}. Means per rank and step over "
        f"{counted(doc.rank_steps[0], 'rank-step')} (A) and "
        f"{counted(doc.rank_steps[1], 'rank-step')} (B): compute + exposed communication + "
        "idle = the step. Within noise: the change is under twice the standard error of the "
        "difference of the means, the steps the samples (docs/metrics.md, “Diff”)."
    )
    if doc.most_changed:
        st.subheader("Changed most on one rank")
        table(
            pl.DataFrame(
                [{"rank": m.rank, **changes([m.change]).row(0, named=True)}
                 for m in doc.most_changed],
                schema={"rank": pl.Int64, **changes([]).schema},
            ),
            {"rank": ("rank", None), **CHANGE_COLUMNS},
        )  # fmt: skip
        st.caption(
            f"Each of {counted(len(doc.ranks), 'rank')} in both runs against itself, over its "
            "steps: a rank that changed, where the means over ranks hide it."
        )
    if doc.setup:
        st.subheader("Set-up that differs")
        st.markdown("\n".join(f"- **{c.what}**: {c.before} → {c.after}" for c in doc.setup))
    for title, items in (("Per collective", doc.collectives),
                         ("Per bucket or FSDP module", doc.labels)):  # fmt: skip
        if items:
            st.subheader(title)
            table(calls(items), CALLS_COLUMNS)
    if doc.kernels:
        st.subheader("The work whose time changed most (ms per rank and step)")
        table(changes(doc.kernels), CHANGE_COLUMNS)
    for caveat in doc.caveats:
        st.warning(caveat)


def halves(job: Job) -> tuple[str, str]:
    """The run's steps split in two, as step lists: where to start comparing it with itself."""
    steps = sorted({s.step for r in job.ranks for s in r.steps})
    if len(steps) < 2:
        return "", ""
    middle = len(steps) // 2
    first, second = steps[:middle], steps[middle:]
    return f"{first[0]}-{first[-1]}", f"{second[0]}-{second[-1]}"


st.title("Diff")
runs = guarded("Runs", lambda: data.discover_runs(str(data.root())))
if runs is not None and runs.height >= 1:
    names = runs["run"].to_list()
    left, right = st.columns(2)
    a = left.selectbox("run A (before)", names, index=0, key="diff a")
    b = right.selectbox("run B (after)", names, index=min(1, len(names) - 1), key="diff b")
    jobs = [guarded(n, partial(data.job_for, n)) for n in (a, b)]
    if a == b and jobs[0] is not None:
        st.caption("One run: its steps A against its steps B (e.g. before and after a change "
                   "made mid-run).")  # fmt: skip
        first, second = halves(jobs[0])
        picked = []
        for column, side, default in ((left, "A", first), (right, "B", second)):
            text = column.text_input(f"steps {side}", default, key=f"diff steps {side}")
            try:
                picked.append(parse_steps(text))
            except ValueError as e:
                column.error(str(e))
        if len(picked) == 2:
            same = Runs(jobs=(jobs[0],))
            doc = guarded("Diff", lambda: diff(same, picked[0], picked[1]))
            if doc is not None:
                show(doc)
    elif all(j is not None for j in jobs):
        doc = guarded("Diff", lambda: diff(Runs(jobs=tuple(jobs))))  # type: ignore[arg-type]
        if doc is not None:
            show(doc)
elif runs is not None:
    st.info("A diff needs a run under this folder.")
