"""A job of many ranks on one page: the overview's cells (ranks grouped so the chart holds a
bounded number), and calls drawn by size when there are too many to draw one by one. Answers
worked out by hand."""

import polars as pl

from traceview.presentation import overview, spread


def _ranks_by_steps() -> pl.DataFrame:
    # 10 ranks × steps 1 and 2: rank r's window is 10 r + step ms; rank 9's step 2 has no
    # exposed communication known.
    rows = [
        (r, r, step, 10.0 * r + step, None if (r, step) == (9, 2) else float(r))
        for r in range(10)
        for step in (1, 2)
    ]
    return pl.DataFrame(rows, schema=overview.RANK_STEP_SCHEMA, orient="row")


def test_ranks_are_grouped_so_the_cells_stay_within_the_bound():
    # 20 cells for at most 8: rows of k = ceil(20 / 8) = 3 ranks: 0–2, 3–5, 6–8 and 9 alone.
    cells = overview.heat_cells(_ranks_by_steps(), 10, "window_ms", max_cells=8)
    assert cells.height == 8
    got = {(c["first"], c["end"], c["step"]): (c["value"], c["rank"]) for c in cells.to_dicts()}
    assert got == {
        (0, 3, 1): (21.0, 2), (0, 3, 2): (22.0, 2),
        (3, 6, 1): (51.0, 5), (3, 6, 2): (52.0, 5),
        (6, 9, 1): (81.0, 8), (6, 9, 2): (82.0, 8),
        (9, 10, 1): (91.0, 9), (9, 10, 2): (92.0, 9),
    }  # fmt: skip
    assert cells["shown"].to_list() == cells["rank"].to_list()  # positions are the ranks here


def test_a_job_that_fits_gets_a_cell_per_rank_and_step_and_unknowns_are_left_out():
    cells = overview.heat_cells(_ranks_by_steps(), 10, "exposed_ms", max_cells=100)
    assert cells.height == 19  # rank 9's step 2 is not known
    assert (cells["end"] - cells["first"]).to_list() == [1] * 19
    assert cells.filter(pl.col("first") == 4)["value"].to_list() == [4.0, 4.0]


def test_calls_by_size_give_the_median_and_range():
    calls = pl.DataFrame(
        {
            "collective": ["all_reduce"] * 3 + ["all_gather", "all_reduce"],
            "bytes": [1_000_000] * 3 + [2_000_000, None],
            "mb": [1.0] * 3 + [2.0, None],
            "size": ["1.00 MB"] * 3 + ["2.00 MB", "–"],
            "duration_ms": [1.0, 4.0, 2.0, 5.0, 9.0],
            "busbw_gbps": [1.0, 0.25, 0.5, 0.4, None],
        }
    )
    got = spread.size_spread(calls).to_dicts()
    assert [(r["collective"], r["calls"], r["median_ms"], r["low_ms"], r["high_ms"],
             r["busbw_gbps"]) for r in got] == [
        ("all_gather", 1, 5.0, 5.0, 5.0, 0.4),
        ("all_reduce", 3, 2.0, 1.0, 4.0, 0.5),
    ]  # fmt: skip
    spec = spread.size_spread_chart(spread.size_spread(calls)).to_dict()
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["rule", "point"]


def test_many_steps_are_drawn_as_runs_of_steps_with_their_means():
    # One rank, steps 1..10, step s's compute 10 s ms and idle 1 ms; at most 4 bars: runs of
    # ceil(10 / 4) = 3 steps: 1–3, 4–6, 7–9, 10.
    frame = pl.DataFrame(
        [(0, s, part, ms) for s in range(1, 11) for part, ms in (("compute only", 10.0 * s),
                                                                   ("idle", 1.0))],
        schema={"rank": pl.Int64, "step": pl.Int64, "part": pl.String, "ms": pl.Float64},
        orient="row",
    )  # fmt: skip
    binned, per_bar = overview.binned_steps(frame, max_bars=4)
    assert per_bar == 3
    compute = binned.filter(pl.col("part") == "compute only")
    assert compute["steps"].to_list() == ["1–3 (mean)", "4–6 (mean)", "7–9 (mean)", "10–10 (mean)"]
    assert compute["ms"].to_list() == [20.0, 50.0, 80.0, 100.0]
    same, per_bar = overview.binned_steps(frame, max_bars=10)
    assert same is frame and per_bar == 1
