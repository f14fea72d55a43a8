"""Ranks measured together (analysis/stack.py) give each exactly the report it has alone: every
real trace here in stacks of mixed shapes and modes, the same trace twice in one stack (the
same times: nothing may pass from one part to another), and a hand-made stack whose figures
are computed by hand."""

from __future__ import annotations

import random
from pathlib import Path

import msgspec
import polars as pl
import pytest

from tests.reports import same
from traceview.analysis.rank import RankReport, rank_report, rank_reports
from traceview.analysis.stack import Stack
from traceview.analysis.windows import step_breakdowns_of, total_breakdowns
from traceview.model import Timeline, build_timeline, model_rows
from traceview.parse import Trace, read_trace
from traceview.tables import INTERVALS_SCHEMA

ROOT = Path(__file__).parents[2]
FIXTURES = ROOT / "tests/fixtures"
TRACES = [
    *sorted((FIXTURES / "traces").rglob("*.json*")),
    *sorted((FIXTURES / "gpu_sweep").rglob("*.pt.trace.json.gz")),
    *sorted((ROOT / "sample_traces/cpu_sweep").glob("*-dp4/rank*.pt.trace.json.gz")),
]


@pytest.fixture(scope="module")
def modelled() -> list[tuple[Trace, Timeline]]:
    out = []
    for path in TRACES:
        trace = model_rows(read_trace(path))
        timeline = build_timeline(trace)
        out.append((msgspec.structs.replace(trace, events=trace.events.clear()), timeline))
    return out


def reports(pairs: list[tuple[Trace, Timeline]]) -> list[RankReport]:
    return rank_reports(
        [t for t, _ in pairs], [tl for _, tl in pairs], keep_intervals=[True] * len(pairs)
    )


def test_every_trace_in_mixed_stacks_is_measured_as_alone(modelled):
    alone = [rank_report(t, tl, keep_intervals=True) for t, tl in modelled]
    # What the stacks must carry across parts, each in some trace here.
    assert any(r.before_first_step for r in alone)
    assert any(r.idle_where for r in alone) and any(r.backward_tails for r in alone)
    assert {r.mode for r in alone} == {"gpu", "cpu"}
    assert any(not tl.comm_measured for _, tl in modelled)
    rng = random.Random(3)
    stacks = [list(range(len(modelled)))]
    stacks += [rng.sample(range(len(modelled)), rng.randint(2, 8)) for _ in range(8)]
    for members in stacks:
        made = reports([modelled[i] for i in members])
        assert len(made) == len(members)
        for i, report in zip(members, made, strict=True):
            assert same(report, alone[i]), TRACES[i].name


def test_the_same_trace_twice_in_one_stack_is_each_time_itself(modelled):
    for pair in modelled:
        alone = rank_report(*pair, keep_intervals=True)
        first, second = reports([pair, pair])
        assert same(first, alone) and same(second, alone), pair[0].path.name


def timeline(mode: str, rows: list[tuple[str, int, int, int]], spans: list[tuple[int, int, int]],
             comm_measured: bool = True) -> Timeline:  # fmt: skip
    """A hand-made timeline: (kind, ts, end, step) rows, (step, start, end) spans."""
    intervals = (
        pl.DataFrame(
            {
                "kind": [k for k, *_ in rows],
                "name": [k for k, *_ in rows],
                "ts_ns": [r[1] for r in rows],
                "end_ns": [r[2] for r in rows],
                "step": [r[3] for r in rows],
            }
        )
        .select(
            pl.col(c) if c in ("kind", "name", "ts_ns", "end_ns", "step") else pl.lit(None).alias(c)
            for c in INTERVALS_SCHEMA
        )
        .cast(INTERVALS_SCHEMA)
    )  # type: ignore[arg-type]
    step_spans = pl.DataFrame(
        spans, schema={"step": pl.Int64, "span_start_ns": pl.Int64, "span_end_ns": pl.Int64},
        orient="row",
    )  # fmt: skip
    return Timeline(rank=None, mode=mode, intervals=intervals, step_spans=step_spans,  # type: ignore[arg-type]
                    notes=(), comm_measured=comm_measured)  # fmt: skip


def test_a_hand_made_stack_of_cpu_ranks_measured_by_hand():
    # Rank A: compute [0,10) [20,30), comm [5,25); one step spanning [0,40).
    a = timeline("cpu", [("compute", 0, 10, 1), ("compute", 20, 30, 1), ("comm", 5, 25, 1)],
                 [(1, 0, 40)])  # fmt: skip
    # Rank B, in the same times: compute [5,25), comm [0,10) [20,40), communication unseen
    # (its figures None); step [0,30) then [30,50).
    b = timeline("cpu", [("compute", 5, 25, 1), ("comm", 0, 10, 1), ("comm", 20, 40, 2)],
                 [(1, 0, 30), (2, 30, 50)], comm_measured=False)  # fmt: skip
    empty = timeline("cpu", [], [])
    stack = Stack([a, empty, b])
    total_a, total_empty, total_b = total_breakdowns(stack)
    assert total_empty is None
    # A's whole trace is [0,30): C = 20, M = 20, C ∩ M = [5,10) + [20,25) = 10.
    assert (total_a.start_ns, total_a.end_ns) == (0, 30)
    assert (total_a.compute_ns, total_a.comm_ns, total_a.overlap_ns) == (20, 20, 10)
    assert (total_a.exposed_comm_ns, total_a.compute_only_ns, total_a.idle_ns) == (10, 10, 0)
    # B's is [0,40): compute 20; its communication is not known, nor what depends on it.
    assert (total_b.start_ns, total_b.end_ns, total_b.compute_ns) == (0, 40, 20)
    assert (total_b.comm_ns, total_b.overlap_ns, total_b.idle_ns) == (None, None, None)
    steps_a, steps_empty, steps_b = step_breakdowns_of(stack)
    assert steps_empty == []
    (one,) = steps_a
    assert (one.step, one.breakdown.window_ns, one.breakdown.idle_ns) == (1, 40, 10)
    assert [(s.step, s.breakdown.start_ns, s.breakdown.end_ns, s.breakdown.compute_ns)
            for s in steps_b] == [(1, 0, 30, 20), (2, 30, 50, 0)]  # fmt: skip
    assert all(s.breakdown.comm_ns is None for s in steps_b)
