"""Lazy queries run by polars' in-memory engine over a small table with a few of the optimizer's
passes, as polars chooses and fully optimized over a large one — and a rank's whole analysis
comes out the same either way."""

from __future__ import annotations

from pathlib import Path

import msgspec
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from traceview import queries
from traceview.loader.rank import analyze_trace

ROOT = Path(__file__).parents[1]
TRACES = [
    ROOT / "tests/fixtures/traces/nccl_w8_rank3_step1010.json.gz",  # GPU, several streams
    ROOT / "tests/fixtures/traces/gloo_cpu_w300_rank34.json.gz",  # CPU-only, Gloo
    ROOT / "sample_traces/cpu_sweep/ddp-dp4/rank1.pt.trace.json.gz",  # CPU-only, DDP buckets
]


def test_a_small_table_runs_in_memory_and_a_large_one_as_polars_chooses():
    assert queries.engine_for(0) == "in-memory"
    assert queries.engine_for(queries.IN_MEMORY_BELOW_ROWS - 1) == "in-memory"
    assert queries.engine_for(queries.IN_MEMORY_BELOW_ROWS) == "auto"


def test_a_small_tables_query_runs_few_optimizer_passes_and_a_large_ones_all():
    small = queries.optimizations_for(queries.IN_MEMORY_BELOW_ROWS - 1)
    assert small.projection_pushdown and small.simplify_expression  # columns read, folded
    assert not (small.predicate_pushdown or small.comm_subexpr_elim or small.comm_subplan_elim)
    large = queries.optimizations_for(queries.IN_MEMORY_BELOW_ROWS)
    default = pl.QueryOptFlags()
    passes = ("predicate_pushdown", "projection_pushdown", "comm_subexpr_elim", "slice_pushdown")
    assert all(getattr(large, p) == getattr(default, p) for p in passes)
    assert large.comm_subexpr_elim and large.predicate_pushdown


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_either_way_gives_the_same_analysis(path, monkeypatch):
    monkeypatch.setattr(queries, "IN_MEMORY_BELOW_ROWS", 1 << 62)  # every query as a small one
    in_memory = analyze_trace(path, keep_intervals=True)
    monkeypatch.setattr(queries, "IN_MEMORY_BELOW_ROWS", 0)  # every query as a large one
    chosen = analyze_trace(path, keep_intervals=True)
    assert in_memory.steps and in_memory.intervals is not None and chosen.intervals is not None
    frames = ("calls", "intervals", "work")
    for name in frames:
        assert_frame_equal(getattr(in_memory, name), getattr(chosen, name))
    rest = [f for f in msgspec.structs.fields(in_memory) if f.name not in frames]
    for field in rest:
        assert getattr(in_memory, field.name) == getattr(chosen, field.name), field.name
