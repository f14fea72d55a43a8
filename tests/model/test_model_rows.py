"""model_rows keeps every event the model reads: the timeline built from it is the timeline
built from the whole trace, on every real trace here, and a GPU trace holds far fewer rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from traceview.model import build_timeline, model_rows
from traceview.parse import read_trace

FIXTURES = Path(__file__).parents[1] / "fixtures/traces"
# Every real trace here, and a rank of each of the harness's sweeps: the CPU one (Gloo, with its
# training ops) and the GPU one (FSDP2 on CUDA, torch 2.11).
TRACES = [
    *sorted(FIXTURES.rglob("*.json*")),
    Path(__file__).parents[2] / "sample_traces/cpu_sweep/ddp-dp2/rank0.pt.trace.json.gz",
    FIXTURES.parent / "gpu_sweep/zero3-dp1/rank0.pt.trace.json.gz",
]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
@pytest.mark.parametrize("comm_pattern", [None, "Memcpy|elementwise"])
def test_the_timeline_from_the_rows_the_model_reads_is_the_whole_traces(path, comm_pattern):
    trace = read_trace(path)
    whole, slim = (
        build_timeline(trace, comm_pattern),
        build_timeline(model_rows(trace), comm_pattern),
    )
    assert slim.intervals.equals(whole.intervals)
    assert slim.step_spans.equals(whole.step_spans)
    assert (slim.mode, slim.notes, slim.comm_measured) == (
        whole.mode,
        whole.notes,
        whole.comm_measured,
    )


def test_a_gpu_trace_keeps_a_fraction_of_its_rows_and_a_cpu_trace_its_cpu_spans():
    gpu = read_trace(FIXTURES / "nccl_ddp_w2_rank0_step5.json.gz")
    assert model_rows(gpu).events.height < gpu.events.height / 2
    cpu = read_trace(FIXTURES / "gloo_cpu_w300_rank34.json.gz")
    slim = model_rows(cpu).events
    assert slim.height == cpu.events.height
    assert slim.columns == ["row", "ts_ns", "end_ns", "name", "cat", "pid", "tid"]
