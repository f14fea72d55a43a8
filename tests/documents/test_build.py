"""The analyze document's step rows: each step's figures as the rank's breakdown holds them."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

import traceview
from traceview.analysis.breakdown import METRICS
from traceview.documents import build
from traceview.documents import structs as d

TRACES = Path(__file__).parents[1] / "fixtures" / "traces"
BREAKDOWN_FIELDS = set(d.BreakdownJson.__struct_fields__)


@pytest.mark.parametrize(
    "trace",
    [
        "nccl_ddp_w2_rank0_step5.json.gz",  # GPU steps, communication recorded
        "single_gpu_no_comm_step6.json.gz",  # one GPU, no communication
        "gloo_cpu_w300_rank34.json.gz",  # a CPU rank of many short steps
    ],
)
def test_each_step_row_holds_its_breakdown_in_us_as_the_totals_do(trace):
    report = traceview.load(TRACES / trace).ranks[0]
    rows = build.step_rows(report, None)
    steps = [row for row in rows if not row.before_first_step]
    assert [row.step for row in steps] == [s.step for s in report.steps]
    assert [row.partial for row in steps] == [s.partial for s in report.steps]
    for row, s in zip(steps, report.steps, strict=True):
        shown = msgspec.structs.asdict(row)
        assert {k: shown[k] for k in BREAKDOWN_FIELDS} == msgspec.structs.asdict(
            build.breakdown(s.breakdown)
        )
        assert (row.kernels, row.memcpy, row.memset) == (None, None, None)
        # Each metric the analysis measures, read through its own accessor, in µs.
        b = s.breakdown
        for metric in METRICS:
            ns = b.ns(metric)
            assert shown[f"{metric}_us"] == (None if ns is None else ns / 1000.0)
        assert shown["overlap_pct"] == b.overlap_pct
    chosen = {s.step for s in report.steps[1::2]}
    assert [row.step for row in build.step_rows(report, chosen)] == sorted(chosen)  # type: ignore[arg-type]
