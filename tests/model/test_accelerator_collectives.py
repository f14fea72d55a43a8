"""Other accelerators' collectives are communication: MTIA's hccl kernels (mtia_ccp_events,
Kineto's alias of "kernel"), Intel XPU's oneCCL collectives (Kineto's collective_comm, recorded
on the host thread, launched by no runtime call) and Ascend's hcom_ tasks. Every answer is
worked by hand: one step [0, 1000) µs; compute [100, 600); communication [500, 800); so
overlap [500, 600) = 100, exposed 200."""

from __future__ import annotations

import csv
import io
import json

import polars as pl
import pytest

from tests import tracebuild as tb
from tests.cli.run_cli import traceview
from traceview import analyze_trace
from traceview.documents.lanes import lane_names

# record_param_comms' metadata: an all-reduce of 1000 floats (4000 bytes) in a group of 2.
_ALL_REDUCE = {
    "Collective name": "allreduce",
    "In msg nelems": 1000,
    "Out msg nelems": 1000,
    "dtype": "Float",
    "Group size": 2,
}


def _compute(runtime: str, cat: str = "kernel") -> list[tb.Event]:
    return [
        tb.step(1, 0, 1000),
        {**tb.launch(1, 50, name="launch"), "cat": runtime},
        {**tb.launch(2, 60, name="launch"), "cat": runtime},
        tb.kernel("fc_fwd", 100, 200, 1, cat=cat),
        tb.kernel("fc_bwd", 300, 300, 2, cat=cat),
    ]


def _mtia() -> list[tb.Event]:
    # The collective's kernel carries record_param_comms' metadata, as Kineto writes it.
    return [
        *_compute("mtia_runtime", "mtia_ccp_events"),
        {**tb.launch(3, 70, name="launch"), "cat": "mtia_runtime"},
        tb.kernel("hccl:all_reduce", 500, 300, 3, stream=20, cat="mtia_ccp_events", **_ALL_REDUCE),
    ]


def _oneccl_record(ts: float = 500, dur: float = 300) -> tb.Event:
    # XPU's PTI record of a oneCCL collective: on the calling process and thread, no correlation.
    return {
        "ph": "X",
        "cat": "collective_comm",
        "name": "xccl::allreduce",
        "pid": tb.PID,
        "tid": 1,
        "ts": ts,
        "dur": dur,
        "args": {"Communicator_id": 7},
    }


def _xpu() -> list[tb.Event]:
    # The CPU call holds the collective's start: its sizes are the call's.
    return [
        *_compute("xpu_runtime"),
        tb.cpu_op("xccl:all_reduce", 490, 20),
        tb.cpu_op("record_param_comms", 495, 10, **_ALL_REDUCE),
        _oneccl_record(),
    ]


def _ascend() -> list[tb.Event]:
    return [
        *_compute("cuda_runtime"),
        tb.launch(3, 70),
        tb.kernel("hcom_allReduce__503_0_1", 500, 300, 3, stream=20, **_ALL_REDUCE),
    ]


@pytest.mark.parametrize(
    ("events", "library"),
    [(_mtia, "HCCL"), (_xpu, "XCCL"), (_ascend, "NCCL")],  # Ascend's: the rank's backend
    ids=["mtia", "xpu", "ascend"],
)
def test_an_accelerators_collective_is_communication_with_its_size(tmp_path, events, library):
    path = tb.write(tmp_path / "rank0.json", tb.document(events(), world=2))
    report = analyze_trace(path, keep_intervals=True)
    assert report.intervals is not None
    comm_lanes = report.intervals.filter(pl.col("kind") == "comm")["lane"].unique().to_list()
    names = lane_names(report.intervals, report.backend)
    assert [names[lane] for lane in comm_lanes] == [f"{comm_lanes[0]} ({library})"]
    # A runtime's record lies on the host thread that made the call (tid 1), not on a stream.
    assert comm_lanes == ["host thread 1" if events is _xpu else "stream 20"]
    assert report.mode == "gpu"
    ((step, b),) = [(s.step, s.breakdown) for s in report.steps]
    assert step == 1
    assert (b.compute_ns, b.comm_ns, b.overlap_ns, b.exposed_comm_ns) == (
        500_000,
        300_000,
        100_000,
        200_000,
    )
    (call,) = report.collectives
    assert (call.collective, call.count, call.bytes) == ("all_reduce", 1, 4000)
    caveats = [n.message for n in report.notes if n.severity == "caveat"]
    # Only a runtime's records are said: they time the calls as that runtime saw them.
    timed_by_records = "1 collective timed by a runtime's own record (Kineto's collective_comm"
    assert [m[: len(timed_by_records)] for m in caveats] == (
        [timed_by_records] if events is _xpu else []
    )


def test_a_collective_recorded_as_a_kernel_and_by_the_runtime_is_read_once(tmp_path):
    # An NCCL kernel [500, 800) and the runtime's record of the same collective [490, 810):
    # the kernel is read, the record not (its 20 µs more would be counted otherwise).
    events = [
        *_compute("cuda_runtime"),
        tb.launch(3, 70),
        tb.collective(tb.DDP_ALL_REDUCE, 500, 300, 3, "allreduce", (1000, 1000)),
        _oneccl_record(490, 320),
    ]
    report = analyze_trace(tb.write(tmp_path / "rank0.json", tb.document(events, world=2)))
    assert not [n for n in report.notes if n.severity == "caveat"]  # the records are not read
    (b,) = [s.breakdown for s in report.steps]
    assert (b.comm_ns, b.exposed_comm_ns) == (300_000, 200_000)
    assert [(c.collective, c.count) for c in report.collectives] == [("all_reduce", 1)]


@pytest.mark.cli
def test_mtia_collectives_are_in_the_json(tmp_path):
    path = tb.write(tmp_path / "rank0.json", tb.document(_mtia(), world=2))
    result = traceview("analyze", path, "--format", "json")
    assert result.code == 0
    (rank,) = json.loads(result.out)["ranks"]
    assert rank["collectives"] == [
        {"collective": "all_reduce", "count": 1, "total_us": 300.0, "bytes": 4000, "bytes_known": 1}
    ]
    assert rank["total"]["exposed_comm_us"] == 200.0


@pytest.mark.cli
def test_collectives_timed_by_a_runtime_are_said_in_every_format(tmp_path):
    path = tb.write(tmp_path / "rank0.json", tb.document(_xpu(), world=2))
    said = "1 collective timed by a runtime's own record (Kineto's collective_comm: XPU's oneCCL)"
    assert f"caveat: {said}" in traceview("analyze", path).out
    (rank,) = json.loads(traceview("analyze", path, "--format", "json").out)["ranks"]
    assert [n["severity"] for n in rank["notes"] if n["message"].startswith(said)] == ["caveat"]
    rows = list(csv.DictReader(io.StringIO(traceview("analyze", path, "--format", "csv").out)))
    assert rows and all(said in row["caveats"] for row in rows)
