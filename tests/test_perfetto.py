"""The exported timeline: on a hand-made trace its added tracks and annotated calls, by hand; on
a real one, the same file however many rows are written at a time."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import polars as pl

import traceview
from tests import tracebuild as tb
from traceview import perfetto
from traceview.perfetto import event_chunks, write_annotated


def annotated_events(job):
    """The events as written, decoded."""
    for _, chunk in event_chunks(job):
        yield from json.loads(b"[" + bytes(chunk) + b"]")


def test_tracks_and_calls_of_a_hand_made_trace(tmp_path):
    folder = tb.run_folder(tmp_path, "run", steps=[9.0, 1e-4, 1e-4])
    job = traceview.load(folder, keep_intervals=True)
    events = list(annotated_events(job))
    spans = [e for e in events if e["ph"] == "X"]
    tracks = {e["name"]: (e["ts"], e["dur"]) for e in spans if e["cat"] == "traceview"}
    # Compute [20,130) and [140,170) µs (the kernel before the first step included), the
    # all-reduce [70,140): overlap [70,130), exposed [130,140); times from the first start, 20.
    assert tracks == {"overlap": (50.0, 60.0), "exposed comm": (110.0, 10.0)}
    (call,) = [e for e in spans if e["cat"] == "comm"]
    assert (call["ts"], call["dur"]) == (50.0, 70.0)
    assert call["args"]["collective"] == "all_reduce" and call["args"]["bytes"] == 4000
    assert call["args"]["exposed_ns"] == 10_000
    # No bucket layout recorded, no FSDP module: no label said.
    assert call["args"]["label"] is None and call["args"]["bucket"] is None
    assert {e["cat"] for e in spans} == {"traceview", "compute", "comm", "memory", "critical path"}
    # The critical path (one rank: its collective is unmatched), a leg a step: step 1 [50, 140)
    # waits idle for the all-reduce, launched at 30 but begun at 70, then runs it; step 2 its
    # compute [140, 170).
    path = [(e["name"], e["ts"], e["dur"], e["args"]["ms_by_category"])
            for e in spans if e["cat"] == "critical path"]  # fmt: skip
    assert path == [("path: unmatched", 30.0, 90.0, "unmatched 0.07, idle 0.02"),
                    ("path: compute", 120.0, 30.0, "compute 0.03")]  # fmt: skip
    lanes = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {"overlap", "exposed comm"} < lanes


def test_written_whole_and_compressed(tmp_path):
    job = traceview.load(tb.run_folder(tmp_path, "run", steps=[9.0, 1e-4]), keep_intervals=True)
    plain, packed = io.BytesIO(), io.BytesIO()
    count = write_annotated(job, plain, compress=False)
    write_annotated(job, packed, compress=True)
    doc = json.loads(plain.getvalue())
    assert len(doc["traceEvents"]) == count == len(list(annotated_events(job)))
    assert json.loads(gzip.decompress(packed.getvalue())) == doc


def test_written_a_few_rows_at_a_time_is_the_same_file(tmp_path, monkeypatch):
    # A real rank (hundreds of intervals and calls) written 7 rows at a time, as a GB trace's
    # millions are written ROWS_AT_A_TIME at a time: the same bytes, the same count.
    trace = Path(__file__).parent / "fixtures/traces/nccl_ddp_w2_rank0_step5.json.gz"
    job = traceview.load(trace, keep_intervals=True)
    whole = io.BytesIO()
    count = write_annotated(job, whole, compress=False)
    monkeypatch.setattr(perfetto, "ROWS_AT_A_TIME", 7)
    spans = [n for n, text in event_chunks(job) if bytes(text[:9]) == b'{"ph":"X"']
    assert max(spans) == 7 and sum(spans) > 100
    sliced = io.BytesIO()
    assert write_annotated(job, sliced, compress=False) == count > 7
    assert sliced.getvalue() == whole.getvalue()


def test_calls_take_the_labels_of_their_own_track_and_start():
    # Two tracks with a call each at 100 ns, a second call at 100 ns + 1 on track 2, a label of
    # a lane the rank has no track for, two labels of one (lane, start), and a call no label
    # names: each call takes only the first label of its own (lane, start), in the calls' order.
    calls = pl.DataFrame({"ts_ns": [100, 100, 101, 5], "tid": [1, 2, 2, 1], "n": [0, 1, 2, 3]})
    labels = pl.DataFrame(
        {
            "lane": ["b", "a", "b", "c", "a"],
            "ts_ns": [101, 100, 100, 100, 100],
            "label": ["b@101", "a@100", "b@100", "c@100", "a@100 again"],
        }
    )
    out = perfetto._labelled(calls, labels, {"a": 1, "b": 2})
    assert out.columns == ["ts_ns", "tid", "n", "label"]
    assert out["n"].to_list() == [0, 1, 2, 3]
    assert out["label"].to_list() == ["a@100", "b@100", "b@101", None]


def test_labels_taken_row_for_row_are_the_ones_a_join_finds(monkeypatch):
    # Two ranks' calls, labelled as `traceview collectives` makes them: row for row (the path a
    # GB trace's millions of calls take), and again through the join on track and start.
    folder = Path(__file__).parent / "fixtures/traces/nccl_sampled_w128"
    job = traceview.load(folder, keep_intervals=True)
    assert len(job.ranks) == 2 and job.calls.height == 20
    asked = []
    row_for_row = perfetto._row_for_row
    monkeypatch.setattr(
        perfetto, "_row_for_row", lambda *k: asked.append(row_for_row(*k)) or asked[-1]
    )
    first = io.BytesIO()
    write_annotated(job, first, compress=False)
    assert asked and all(asked)
    monkeypatch.setattr(perfetto, "_row_for_row", lambda *k: False)
    joined = io.BytesIO()
    write_annotated(job, joined, compress=False)
    assert joined.getvalue() == first.getvalue()


def test_the_threads_are_named_as_the_dashboard_names_its_lanes():
    # A real Gloo rank: its training thread and Gloo workers, by those names in both places.
    from traceview.presentation.lanes import timeline_frame

    run = Path(__file__).parents[1] / "sample_traces" / "cpu_sweep" / "ddp-dp2"
    job = traceview.load(run, keep_intervals=True)
    events = list(annotated_events(job))
    threads = {e["pid"]: set() for e in events if e["name"] == "process_name"}
    for e in events:
        if e["name"] == "thread_name":
            threads[e["pid"]].add(e["args"]["name"])
    frame, _ = timeline_frame(job, step=2)
    for rank in (0, 1):
        rows = set(frame.filter(pl.col("rank") == rank)["row"])
        drawn = {row.removeprefix(f"rank {rank} · ") for row in rows} - {"collectives"}
        assert "training thread" in drawn and any(n.startswith("Gloo worker") for n in drawn)
        assert drawn <= threads[rank], (drawn, threads[rank])
        assert not any(name.startswith("thread ") for name in threads[rank])
