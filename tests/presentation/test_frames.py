"""The dashboard's tidy frames on a hand-made run: every number as computed by hand from
tracebuild.gpu_example (times in µs there, ms here)."""

from __future__ import annotations

import polars as pl
import pytest

import traceview
from tests import tracebuild as tb
from traceview.documents.lanes import lane_names
from traceview.presentation import frames, lanes


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


def _bars(frame):
    return {
        (row, kind): sorted(zip(rows["start_ms"], rows["end_ms"], strict=True))
        for (row, kind), rows in frame.group_by("row", "kind")
    }


def test_timeline_names_its_lanes_and_adds_the_overlap_tracks(job):
    frame, joined = lanes.timeline_frame(job, step=1)
    # Origin: the step's earliest start, 50 µs; the window is [50,140) µs.
    assert _bars(frame) == {
        ("rank 0 · overlap", "overlap"): [pytest.approx((0.020, 0.080))],
        ("rank 0 · exposed comm", "exposed comm"): [pytest.approx((0.080, 0.090))],
        # One rank: no arrival to wait for, so the call is drawn whole.
        ("rank 0 · collectives", "collective"): [pytest.approx((0.020, 0.090))],
        # The two touching kernels [50,80) and [80,130) are one bar at any width.
        ("rank 0 · stream 7 (compute)", "compute"): [pytest.approx((0.0, 0.080))],
        ("rank 0 · stream 20 (NCCL)", "comm"): [pytest.approx((0.020, 0.090))],
    }
    assert joined
    names = dict(zip(frame["row"], frame["name"], strict=True))
    assert names["rank 0 · stream 7 (compute)"] == "volta_sgemm_128x64_nn and 1 more"
    assert lanes.row_order(frame) == [
        "rank 0 · overlap",
        "rank 0 · exposed comm",
        "rank 0 · collectives",
        "rank 0 · stream 7 (compute)",
        "rank 0 · stream 20 (NCCL)",
    ]


def test_work_closer_than_a_pixel_is_one_bar(job):
    # 2 px across the 90 µs window: a pixel is 45 µs, so the compute ending at 130 µs and the
    # all-reduce's tracks stay apart only where a gap is wider than that.
    frame, joined = lanes.timeline_frame(job, step=1, width_px=2)
    assert joined and frame.filter(pl.col("kind") == "compute").height == 1


def test_cpu_lanes_are_the_training_thread_and_the_gloo_worker(tmp_path):
    folder = tb.run_folder(tmp_path, "gloo", dp=1, steps=[1.0], events=tb.cpu_example())
    job = traceview.load(folder, keep_intervals=True)
    frame, _ = lanes.timeline_frame(job, step=7)
    kinds = {row: set(rows["kind"]) for (row,), rows in frame.group_by("row")}
    # Thread 1 runs the model's compute; thread 2 only Gloo's all-reduces.
    assert kinds["rank 0 · training thread"] == {"compute"}
    assert kinds["rank 0 · Gloo worker"] == {"comm"}  # as its calls say: "gloo:all_reduce"
    assert set(frame["lane"]) >= {"thread 1", "thread 2"}  # the trace's names, on hover


def test_lane_names_by_what_runs_on_them():
    def lane(name, kind, work, ts=0, dur=10):
        said = f"{work} on {name}"  # no library named: the rank's backend is said
        return {"lane": name, "lane_kind": kind, "kind": work, "name": said, "ts_ns": ts,
                "end_ns": ts + dur}  # fmt: skip

    intervals = pl.DataFrame(
        [
            lane("thread 5", "cpu_thread", "compute", dur=50),
            lane("thread 6", "cpu_thread", "compute", dur=10),  # less compute: not the trainer
            lane("thread 7", "cpu_thread", "comm"),
            lane("thread 8", "cpu_thread", "comm"),
            lane("stream 7", "gpu_stream", "compute"),
            lane("stream 9", "gpu_stream", "memory"),
            lane("stream 21", "gpu_stream", "comm"),
        ]
    )
    assert lane_names(intervals, "gloo") == {
        "thread 5": "training thread",
        "thread 6": "thread 6",
        "thread 7": "Gloo worker 1",
        "thread 8": "Gloo worker 2",
        "stream 7": "stream 7 (compute)",
        "stream 9": "stream 9 (copies)",
        "stream 21": "stream 21 (Gloo)",
    }
    assert lane_names(intervals.filter(pl.col("lane") == "stream 21"), "nccl") == {
        "stream 21": "stream 21 (NCCL)"
    }


def test_sizes_in_words():
    assert [frames.size_words(n) for n in (None, 64, 4_000, 9_999, 10_000, 5_320_000)] == [
        "–", "64 B", "4.0 KB", "10.0 KB", "0.01 MB", "5.32 MB",
    ]  # fmt: skip
    assert frames.size_unit(9.9e9) == ("MB", 1e6) and frames.size_unit(1e10) == ("GB", 1e9)


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
        # No run record and no gradient shapes: nothing to count Ψ from, and said.
        "job: traffic and buffers per Ψ unknown: no run record, and the traces record no "
        "gradient shapes to count the parameters from (profile with record_shapes=True)",
        "job: strategy ddp inferred from the traces: 4 all-reduces launched from the backward "
        "pass in the 1 rank trace, as DDP's gradient hooks launch them (no other wrapper seen)",
    ]
    shown = frames.readable(frames.scaling_frame(runs), frames.SCALING_COLUMNS)
    assert shown["strategy"].to_list() == ["ddp (inferred)"]
