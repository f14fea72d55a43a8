"""The run identity the harness writes into each trace (`traceview_run`), read back."""

from __future__ import annotations

import traceview
from tests import tracebuild as tb

RUN = {"record_version": 1, "strategy": "zero2", "world_size": 2, "config": {"seq_len": 32}}


def test_a_trace_names_its_run_even_without_a_run_record(tmp_path):
    trace = tb.write(tmp_path / "rank0.json", tb.document(tb.gpu_example(), traceview_run=RUN))
    report = traceview.analyze_trace(trace)
    assert report.run is not None
    assert (report.run.strategy, report.run.world_size, report.run.config.seq_len) == (
        "zero2",
        2,
        32,
    )
    assert traceview.load(tmp_path).strategy == "zero2"


def test_traces_from_before_the_version_was_carried_are_version_1(tmp_path):
    unversioned = {k: v for k, v in RUN.items() if k != "record_version"}
    trace = tb.write(tmp_path / "t.json", tb.document(tb.gpu_example(), traceview_run=unversioned))
    report = traceview.analyze_trace(trace)
    assert report.run is not None and report.run.record_version == 1
    assert not any("traceview_run" in n.message for n in report.notes)


def test_an_unusable_or_newer_identity_is_ignored_and_said(tmp_path):
    for value, said in [
        ({"strategy": "ddp"}, "traceview_run is not usable"),
        ({**RUN, "record_version": 9}, "record_version 9 is newer than this traceview reads"),
    ]:
        trace = tb.write(tmp_path / "t.json", tb.document(tb.gpu_example(), traceview_run=value))
        report = traceview.analyze_trace(trace)
        assert report.run is None
        assert any(said in n.message for n in report.notes)
