"""A trace cut short: which steps may miss work, and how much of the profile the cut took
(hand-built in Kineto's order: CPU events first, then device work in time order; µs)."""

from __future__ import annotations

import json

from tests import tracebuild as tb
from traceview import analyze_trace


def test_the_steps_after_the_cut_are_partial_and_the_loss_is_said(tmp_path):
    cpu = [tb.step(n, 100 * (n - 1), 100) for n in (1, 2, 3)]
    cpu += [tb.launch(n, 100 * (n - 1) + 10) for n in (1, 2, 3)]
    gpu = [tb.kernel(f"gemm{n}", 100 * (n - 1) + 20, 70, corr=n) for n in (1, 2, 3)]
    text = json.dumps(tb.document(cpu + gpu, world=1))
    cut = text.index('"gemm3"')  # inside the last kernel: the file ends there
    (tmp_path / "t.json").write_text(text[:cut])
    report = analyze_trace(tmp_path / "t.json")
    assert report.truncated
    # Device work stops at 190 µs (gemm2's end); the last step's span ends at 300: 110 of the
    # 300 µs profiled (37 %) have no device work left. Steps whose span ends after 190: 2, 3.
    (caveat,) = [n.message for n in report.notes if n.caveat]
    assert caveat == (
        "the trace is cut short: its device work stops 0.110 ms (37 % of the profiled steps' "
        "time) before its last ProfilerStep ends; partial steps: 2, 3"
    )
    assert [(s.step, s.partial) for s in report.steps] == [(1, False), (2, True)]


def test_a_whole_trace_has_no_partial_step(tmp_path):
    report = analyze_trace(tb.write(tmp_path / "t.json", tb.document(tb.gpu_example())))
    assert not report.truncated and not any(s.partial for s in report.steps)
