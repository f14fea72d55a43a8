"""A job of many ranks at a glance, and the few ranks a page draws in full.

The overview is one cell per rank and step — its window, or its exposed communication — with
neighbouring ranks grouped into one row where the job has more ranks than the chart has room
for: at most MAX_CELLS cells are sent, each row showing (and naming) its largest. The pages
then draw a few ranks in full: by default the slowest, the median and the fastest."""

from __future__ import annotations

import math

import altair as alt
import polars as pl

from traceview import Job
from traceview.presentation.frames import rank_label

SHOWN_AT_ONCE = 4  # a job of more ranks shows an overview, and a few ranks in full
MAX_CELLS = 8_192  # cells of the overview sent to the browser, whatever the job's size
MAX_BARS = 300  # bars of a per-step chart; beyond it, runs of consecutive steps share one
MEASURES = {"step time": "window_ms", "exposed communication": "exposed_ms"}
_HEIGHT_PX = 320
CLICKED = "cell"  # the overview's selection: the position of the rank whose cell was clicked

RANK_STEP_SCHEMA = {
    "at": pl.Int64,  # the rank's position in job.ranks
    "rank": pl.Int64,
    "step": pl.Int64,
    "window_ms": pl.Float64,
    "exposed_ms": pl.Float64,  # null where the trace cannot show communication
}


def many_ranks(job: Job) -> bool:
    return len(job.ranks) > SHOWN_AT_ONCE


def rank_step_frame(job: Job) -> pl.DataFrame:
    """Every rank's profiler steps: its window and its exposed communication, in ms."""
    rows = [
        (
            at,
            r.rank,
            s.step,
            s.breakdown.window_ns / 1e6,
            None if s.breakdown.exposed_comm_ns is None else s.breakdown.exposed_comm_ns / 1e6,
        )
        for at, r in enumerate(job.ranks)
        for s in r.steps
    ]
    return pl.DataFrame(rows, schema=RANK_STEP_SCHEMA, orient="row")


def heat_cells(
    frame: pl.DataFrame, ranks: int, column: str, max_cells: int = MAX_CELLS
) -> pl.DataFrame:
    """first, end (the positions a row spans, end excluded), step, value (the row's largest),
    rank and shown (whose it is: its rank and position): `ranks` positions grouped into rows
    of k neighbours, k the least for rows × steps ≤ max_cells."""
    known = frame.drop_nulls(column)
    steps = max(1, known["step"].n_unique())
    k = max(1, math.ceil(ranks * steps / max_cells))
    rows = known.with_columns(row=pl.col("at") // k).sort(column, "at", descending=[True, False])
    cells = rows.group_by("row", "step", maintain_order=True).agg(
        value=pl.col(column).first(), rank=pl.col("rank").first(), shown=pl.col("at").first()
    )
    return cells.with_columns(
        first=pl.col("row") * k, end=pl.min_horizontal((pl.col("row") + 1) * k, pl.lit(ranks))
    ).sort("row", "step")


def heat_map_chart(
    cells: pl.DataFrame, ranks: int, measure: str, clickable: bool = True
) -> alt.Chart:
    """Rank (down) by step (across), coloured by the measure; a cell of grouped ranks says
    which of them it shows. `clickable`: a click selects the cell (the dashboard draws its
    rank); the report's is not."""
    spans = cells.with_columns(
        ranks=pl.when(pl.col("end") - pl.col("first") > 1)
        .then(pl.format("ranks at {}–{}", pl.col("first"), pl.col("end") - 1))
        .otherwise(pl.lit("")),
        who=pl.col("rank").map_elements(rank_label, return_dtype=pl.String),
    )
    grouped = spans["ranks"].str.len_chars().max() or 0
    title = f"{measure}, ms" + (" (largest of each row's ranks)" if grouped else "")
    pick = alt.selection_point(name=CLICKED, fields=["shown"], on="click")
    chart = (
        alt.Chart(spans)
        .mark_rect()
        .encode(
            x=alt.X("step:O", title="step"),
            y=alt.Y(
                "first:Q",
                title="rank",
                scale=alt.Scale(domain=[0, ranks], reverse=True, nice=False),
            ),
            y2="end:Q",
            color=alt.Color("value:Q", title=title, scale=alt.Scale(scheme="orangered")),
            tooltip=[
                alt.Tooltip("step:O"),
                alt.Tooltip("who:N", title="rank"),
                alt.Tooltip("ranks:N", title="row of"),
                alt.Tooltip("value:Q", title=f"{measure} ms", format=",.3f"),
            ],
        )
        .properties(
            title=f"Every rank's {measure} per step"
            + (" (click a cell to draw its rank below)" if clickable else ""),
            width="container",
            height=min(_HEIGHT_PX, max(120, 22 * ranks)),
            autosize=alt.AutoSizeParams(type="fit-x", contains="padding"),
        )
    )
    return chart.add_params(pick) if clickable else chart


def default_ranks(job: Job, step: int | None = None) -> list[int]:
    """The positions of the ranks a page draws first: every rank of a small job; of a larger one
    the slowest, the median and the fastest — at `step` by its window, else by each rank's
    median step window — the lanes of 1,024 ranks fit no page, and these three say the most."""
    if not many_ranks(job):
        return list(range(len(job.ranks)))
    frame = rank_step_frame(job)
    if step is not None:
        frame = frame.filter(pl.col("step") == step)
    timed = (
        frame.group_by("at")
        .agg(pl.col("window_ms").median())
        .sort("window_ms", "at")["at"]
        .to_list()
    )
    return ends_and_middle(timed) if timed else list(range(SHOWN_AT_ONCE))


def ranks_by_memory(memory: pl.DataFrame) -> list[int]:
    """The ranks of a memory frame (frames.memory_frame), from the one holding the fewest
    measured bytes to the one holding the most."""
    held = memory.group_by("rank").agg(pl.col("measured_mb").sum())
    return held.sort("measured_mb", "rank")["rank"].to_list()


def ends_and_middle(ordered: list[int]) -> list[int]:
    """The last, the middle and the first of a list in order (the largest, the median and the
    smallest), each once."""
    return list(dict.fromkeys([ordered[-1], ordered[len(ordered) // 2], ordered[0]]))


def binned_steps(frame: pl.DataFrame, max_bars: int = MAX_BARS) -> tuple[pl.DataFrame, int]:
    """An overlap frame (rank, step, part, ms) with at most about `max_bars` bars: each rank's
    steps in runs of k consecutive ones, each part their mean ms, `steps` naming the run
    ("12–19 (mean)"); k is returned (1: the frame as it was — a trace with a step every few KB
    has tens of thousands, which no chart shows)."""
    bars = frame.select("rank", "step").unique().height
    if bars <= max_bars:
        return frame, 1
    k = math.ceil(bars / max_bars)
    runs = frame.with_columns(run=(pl.col("step").rank("dense").over("rank") - 1) // k)
    binned = runs.group_by("rank", "run", "part").agg(
        first=pl.col("step").min(), last=pl.col("step").max(), ms=pl.col("ms").mean()
    )
    return binned.select(
        "rank",
        step=pl.col("first"),
        steps=pl.format("{}–{} (mean)", "first", "last"),
        part="part",
        ms="ms",
    ).sort("rank", "step"), k
