"""Traces modelled together (model/batch.py) give each exactly the timeline it has alone: every
real trace here, in batches of mixed shapes, and the same trace twice in one batch (the same
processes, threads, correlation ids and times: nothing may pass from one part to another)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from traceview.model import Timeline, build_timeline, build_timelines, model_rows
from traceview.parse import read_trace

ROOT = Path(__file__).parents[2]
FIXTURES = ROOT / "tests/fixtures"
TRACES = [
    *sorted((FIXTURES / "traces").rglob("*.json*")),
    *sorted((FIXTURES / "gpu_sweep").rglob("*.pt.trace.json.gz")),
    *sorted((ROOT / "sample_traces/cpu_sweep").glob("*-dp4/rank*.pt.trace.json.gz")),
]


def same(a: Timeline, b: Timeline) -> bool:
    return (
        a.intervals.schema == b.intervals.schema
        and a.intervals.equals(b.intervals)
        and a.step_spans.schema == b.step_spans.schema
        and a.step_spans.equals(b.step_spans)
        and (a.rank, a.mode, a.notes, a.comm_measured, a.wrappers)
        == (b.rank, b.mode, b.notes, b.comm_measured, b.wrappers)
    )


@pytest.fixture(scope="module")
def traces():
    return [model_rows(read_trace(p)) for p in TRACES]


@pytest.mark.parametrize("comm_pattern", [None, "Memcpy|elementwise"])
def test_every_trace_in_mixed_batches_is_modelled_as_alone(traces, comm_pattern):
    alone = [build_timeline(t, comm_pattern) for t in traces]
    rng = random.Random(7)
    batches = [list(range(len(traces)))]
    batches += [rng.sample(range(len(traces)), rng.randint(2, 6)) for _ in range(6)]
    for batch in batches:
        made = build_timelines([traces[i] for i in batch], comm_pattern)
        assert len(made) == len(batch)
        for i, timeline in zip(batch, made, strict=True):
            assert same(timeline, alone[i]), TRACES[i].name


def test_the_same_trace_twice_in_one_batch_is_each_time_itself(traces):
    for trace in traces:
        alone = build_timeline(trace)
        first, second = build_timelines([trace, trace])
        assert same(first, alone) and same(second, alone), trace.path.name
