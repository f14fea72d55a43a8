"""The dashboard's tidy frames on a hand-made run: every number as computed by hand from
tracebuild.gpu_example (times in µs there, ms here)."""

from __future__ import annotations

import pytest

import traceview
from tests import tracebuild as tb
from traceview.dashboard import frames


@pytest.fixture
def job(tmp_path):
    folder = tb.run_folder(tmp_path, "run", dp=1, steps=[9.0, 1e-4, 1e-4])
    return traceview.load(folder, keep_intervals=True)


def test_overlap_parts_add_up_to_each_step(job):
    parts = {(r["step"], r["part"]): r["ms"] for r in frames.overlap_frame(job).to_dicts()}
    # Step 1: window [50,140) spanned by compute [50,130) and all-reduce [70,140): overlap
    # [70,130) 60 µs, exposed [130,140) 10, compute only 80 - 60 = 20, idle 0.
    assert parts[(1, "compute only")] == pytest.approx(0.020)
    assert parts[(1, "overlap")] == pytest.approx(0.060)
    assert parts[(1, "exposed comm")] == pytest.approx(0.010)
    assert parts[(1, "idle")] == pytest.approx(0.0)
    # Step 2: compute [140,170) alone; the memcpy does not stretch the window.
    assert parts[(2, "compute only")] == pytest.approx(0.030)
    assert sum(v for (step, _), v in parts.items() if step == 2) == pytest.approx(0.030)


def test_timeline_adds_overlap_and_exposed_lanes(job):
    frame, merged = frames.timeline_frame(job, step=1)
    assert not merged
    lanes = {
        lane: sorted(zip(rows["start_ms"], rows["end_ms"], strict=True))
        for (lane,), rows in frame.group_by("lane")
    }
    # Origin: the step's earliest start, 50 µs.
    assert lanes["overlap"] == [pytest.approx((0.020, 0.080))]
    assert lanes["exposed comm"] == [pytest.approx((0.080, 0.090))]
    # Above the limit, touching intervals of a lane and kind merge, and the frame says so.
    _, merged = frames.timeline_frame(job, step=1, max_intervals=2)
    assert merged


def test_memory_beside_the_theory(job):
    rows = {r["category"]: r for r in frames.memory_frame(job).to_dicts()}
    # DDP at DP 1, Ψ = 1,000, fp32: 4,000 + 4,000 + 8,000 bytes; the record says 1 byte each.
    assert {c: r["theory_mb"] for c, r in rows.items()} == {
        "params": 0.004,
        "grads": 0.004,
        "optimizer": 0.008,
    }
    assert {r["measured_mb"] for r in rows.values()} == {1e-6}
    assert {r["as_run_mb"] for r in rows.values()} == {None}
    assert {r["precision"] for r in rows.values()} == {"fp32"}


def test_calls_from_the_first_ready_time(job):
    calls = frames.calls_frame(job)
    assert calls.height == 1
    call = calls.row(0, named=True)
    # The all-reduce was launched at 30 µs and ran [70,140): 1,000 floats.
    assert (call["ready_ms"], call["start_ms"], call["end_ms"]) == pytest.approx((0, 0.04, 0.11))
    assert (call["label"], call["mb"]) == ("all_reduce", 0.004)


def test_scaling_and_prediction_frames(tmp_path):
    one = tb.run_folder(tmp_path, "dp1", steps=[9.0, 1e-4, 1e-4])
    two = tb.run_folder(tmp_path, "dp2", dp=2, steps=[9.0, 1e-4, 1e-4])
    runs = traceview.load_runs([one, two])
    scaling = frames.scaling_frame(runs)
    assert sorted(zip(scaling["strategy"], scaling["dp"], strict=True)) == [("ddp", 1), ("ddp", 2)]
    # Weak scaling: the same step time with twice the samples: E(2) = (8 / T) / (2 × 4 / T) = 1.
    assert scaling.filter(scaling["dp"] == 2)["efficiency"][0] == pytest.approx(1.0)
    predicted = frames.prediction_frame(runs)
    assert predicted is not None and predicted["dp"].to_list() == [4, 8, 16]
    assert frames.prediction_frame(traceview.load_runs([one])) is None


def test_an_inferred_strategy_is_said_with_the_caveats(tmp_path):
    (tmp_path / "job").mkdir()
    tb.write(tmp_path / "job" / "rank0.json", tb.document(tb.ddp_steps(None), world=1))
    runs = traceview.load_runs([tmp_path / "job"])
    (row,) = runs.scaling()
    assert (row.strategy_said, row.strategy_source) == ("ddp (inferred)", "inferred")
    assert frames.caveat_lines(runs, root=str(tmp_path)) == [
        "job: strategy ddp inferred from the traces: 4 all-reduces launched from the backward "
        "pass in the 1 rank trace, as DDP's gradient hooks launch them (no other wrapper seen)"
    ]
    shown = frames.readable(frames.scaling_frame(runs), frames.SCALING_COLUMNS)
    assert shown["strategy from"].to_list() == ["inferred"]
