"""Desync and hang signs (docs/metrics.md "Desync"): hand-built jobs with a call removed, changed
or cut off on one rank, and what each check must name, worked out by hand."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

import traceview
from tests import tracebuild as tb
from tests.cli.run_cli import traceview as cli
from traceview.analysis.desync import DesyncSign

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
MB = 1 << 20


def job(tmp_path: Path, calls: dict[int, list[tuple[int, int, float]]], seq: bool = True,
        last: dict[int, int] | None = None, group: bool = True) -> Path:  # fmt: skip
    """Per rank, all-reduces as (seq, bytes, start µs) on group "7" (none: `group` False, as
    2023-era traces record), each ending at its step's 400 µs mark: call s runs in step s =
    [1000 s, 1000 s + 1000). Each rank's trace holds steps 1 to `last[rank]` (default 8), each
    with a compute kernel at [1000 s + 100, 1000 s + 250)."""
    folder = tmp_path / "job"
    folder.mkdir(parents=True)
    for rank, mine in calls.items():
        events = []
        for s in range(1, (last or {}).get(rank, 8) + 1):
            events += [tb.step(s, 1000 * s, 1000), tb.launch(900 + s, 1000 * s + 50),
                       tb.kernel("volta_sgemm", 1000 * s + 100, 150, corr=900 + s)]  # fmt: skip
        for k, (s, nbytes, start) in enumerate(mine):
            args = {
                "Collective name": "allreduce",
                "In msg nelems": nbytes // 4,
                "Out msg nelems": nbytes // 4,
                "dtype": "Float",
            }
            if group:
                args["Process Group Name"] = "7"
            if seq:
                args["Seq"] = s
            at = 1000 * s + start
            events += [tb.launch(k + 1, at - 5),
                       tb.kernel(ALLREDUCE, at, 1000 * s + 400 - at, corr=k + 1, stream=20, **args)]  # fmt: skip
        tb.write(folder / f"rank{rank}.json", tb.document(events, rank=rank, world=len(calls)))
    return folder


def everyone(seqs=range(1, 9), nbytes=MB, start=300.0):
    return [(s, nbytes, start) for s in seqs]


def test_a_collective_one_rank_skipped_is_named_with_the_others_wait(tmp_path):
    calls = {r: everyone() for r in (0, 1, 3)}
    calls[2] = everyone(s for s in range(1, 9) if s != 3)
    found = traceview.load(job(tmp_path, calls)).report.desync
    assert found is not None and (found.groups, found.keyed_by) == (1, "sequence numbers")
    # Ranks 0, 1 and 3 ran all-reduce 3 (1 MB, step 3) for 100 µs each; rank 2 has none.
    assert found.signs == (
        DesyncSign(kind="missing", pg="7", rank=2, others=(0, 1, 3), seq=3,
                   collective="all_reduce", bytes=MB, step=3, others_dur_ns=100_000,
                   said="rank 2 has no call at sequence number 3 of group 7, where ranks 0, 1, "
                   "3 ran all_reduce of 1,048,576 bytes (step 3) and spent 0.100 ms in it"),
    )  # fmt: skip


def test_calls_at_one_number_that_differ_in_size(tmp_path):
    calls = {r: everyone() for r in range(4)}
    calls[1][4] = (5, 2 * MB, 300.0)  # rank 1's call 5 sends 2 MB, the others 1 MB
    (sign,) = traceview.load(job(tmp_path, calls)).report.desync.signs
    assert (sign.kind, sign.rank, sign.seq, sign.bytes, sign.others) == (
        "mismatch",
        1,
        5,
        MB,
        (0, 2, 3),
    )
    assert sign.said == (
        "rank 1 ran all_reduce of 2,097,152 bytes at sequence number 5 of group 7, where ranks 0, "
        "2, 3 ran all_reduce of 1,048,576 bytes (step 5)"
    )


def test_a_rank_that_stops_joining_while_its_trace_goes_on(tmp_path):
    # Rank 3's calls stop after 5 while its trace runs to step 8 (its last kernel ends at 8,250
    # µs): the others' call 6 starts at 6,300. Rank 2's trace ends with step 5 (at 5,400 µs, its
    # profiler stopped early): not a hang sign.
    calls = {r: everyone() for r in (0, 1)}
    calls[2] = everyone(range(1, 6))
    calls[3] = everyone(range(1, 6))
    folder = job(tmp_path, calls, last={2: 5})
    signs = traceview.load(folder).report.desync.signs
    assert [(s.kind, s.rank, s.seq, s.others, s.trace_goes_on) for s in signs] == [
        ("stops early", 2, 6, (0, 1), False),
        ("stops early", 3, 6, (0, 1), True),
    ]
    assert signs[0].said.endswith("after its trace ends (its profiler stopped first)")
    assert signs[1].said == (
        "rank 3's last call in group 7 is sequence number 5; ranks 0, 1 ran 3 more, from "
        "all_reduce of 1,048,576 bytes at 6 (step 6), while its trace goes on: where a hang "
        "would sit"
    )
    assert [s.hang_or_desync for s in signs] == [False, True]


def test_without_sequence_numbers_a_named_group_is_judged_by_steps(tmp_path):
    calls = {r: everyone() for r in (0, 1, 3)}
    calls[2] = everyone(s for s in range(1, 9) if s != 6)
    found = traceview.load(job(tmp_path, calls, seq=False)).report.desync
    assert found.keyed_by == "steps"
    (sign,) = found.signs
    assert (sign.kind, sign.rank, sign.step, sign.seq, sign.collective, sign.others_dur_ns) == (
        "missing", 2, 6, None, "all_reduce", 100_000,
    )  # fmt: skip
    assert sign.others == (0, 1, 3)
    assert sign.said == (
        "rank 2 ran 0 × all_reduce of 1,048,576 bytes in step 6 of group 7, where ranks 0, 1, 3 "
        "ran 1 (0.100 ms each)"
    )


def test_in_step_order_does_not_matter_without_sequence_numbers(tmp_path):
    # Two calls a step of different sizes, started in either order (Gloo's worker threads).
    calls = {
        r: [c for s in range(1, 9) for c in ((s, MB, 100.0), (s, 2 * MB, 300.0))] for r in range(3)
    }
    calls[1] = [c for s in range(1, 9) for c in ((s, 2 * MB, 100.0), (s, MB, 300.0))]
    assert traceview.load(job(tmp_path, calls, seq=False)).report.desync.signs == ()


def test_device_calls_that_name_no_group_and_no_number_are_lined_up_by_stream_order(tmp_path):
    # Two real ranks of a 128-rank NCCL job (2021): no group, no numbers; the same order.
    folder = Path(__file__).parents[1] / "fixtures" / "traces" / "nccl_sampled_w128"
    found = traceview.load(folder).report.desync
    assert (found.groups, found.calls, found.keyed_by) == (1, 20, "order on each stream")
    assert found.signs == () and found.unjudged == ()


def test_without_group_or_numbers_a_rank_missing_one_all_reduce_is_named(tmp_path):
    """A 2023-style job: 4 ranks, one all-reduce a step on stream 20, no group, no numbers;
    rank 2 skips step 3's. The others' order: 8 calls; rank 2's lacks the 3rd."""
    calls = {r: everyone() for r in (0, 1, 3)}
    calls[2] = everyone(s for s in range(1, 9) if s != 3)
    found = traceview.load(job(tmp_path, calls, seq=False, group=False)).report.desync
    assert (found.keyed_by, found.unjudged) == ("order on each stream", ())
    (sign,) = found.signs
    assert (sign.kind, sign.rank, sign.others, sign.step, sign.seq) == (
        "missing",
        2,
        (0, 1, 3),
        3,
        None,
    )
    assert (sign.collective, sign.bytes, sign.others_dur_ns) == ("all_reduce", MB, 100_000)
    assert sign.said == (
        "rank 2 has no call, where ranks 0, 1, 3 ran all_reduce of 1,048,576 bytes (step 3, "
        "call 3 on their stream 1); lined up by order on the stream, which runs its calls in "
        "the order they were issued"
    )


def xpu_job(tmp_path: Path, steps: dict[int, list[int]]) -> Path:
    """Per rank, the steps (each [1000 s, 1000 s + 1000)) that ran a 1 MB all-reduce as XPU's
    oneCCL records it: a collective_comm record on the calling thread (1) at [1000 s + 300,
    1000 s + 400), no group and no number, its size from the CPU call that holds its start."""
    folder = tmp_path / "xpu"
    folder.mkdir()
    for rank, mine in steps.items():
        events = []
        for s in range(1, 9):
            events += [tb.step(s, 1000 * s, 1000), tb.launch(900 + s, 1000 * s + 50),
                       tb.kernel("gemm_kernel", 1000 * s + 100, 150, corr=900 + s)]  # fmt: skip
        for s in mine:
            at = 1000 * s + 300
            events += [
                tb.cpu_op("xccl:all_reduce", at - 10, 20),
                tb.cpu_op("record_param_comms", at - 5, 10, **{
                    "Collective name": "allreduce", "In msg nelems": MB // 4,
                    "Out msg nelems": MB // 4, "dtype": "Float"}),
                {"ph": "X", "cat": "collective_comm", "name": "xccl::allreduce", "pid": tb.PID,
                 "tid": 1, "ts": at, "dur": 100, "args": {"Communicator_id": 7}},
            ]  # fmt: skip
        tb.write(folder / f"rank{rank}.json",
                 tb.document(events, rank=rank, world=len(steps), backend="xccl"))  # fmt: skip
    return folder


def test_a_runtimes_records_are_lined_up_by_their_order_on_the_calling_thread(tmp_path):
    """XPU's oneCCL records, 4 ranks, one all-reduce a step, no group, no numbers: the thread
    that made the calls made them in program order. Rank 2 skips step 3's."""
    steps = {r: list(range(1, 9)) for r in (0, 1, 3)}
    steps[2] = [s for s in range(1, 9) if s != 3]
    job = traceview.load(xpu_job(tmp_path, steps))
    assert {lane for r in job.ranks for lane in r.calls["lane"]} == {"host thread 1"}
    found = job.report.desync
    assert (found.keyed_by, found.unjudged) == ("order on each stream", ())
    (sign,) = found.signs
    assert (sign.kind, sign.rank, sign.others, sign.step) == ("missing", 2, (0, 1, 3), 3)
    assert (sign.collective, sign.bytes, sign.others_dur_ns) == ("all_reduce", MB, 100_000)
    assert sign.said == (
        "rank 2 has no call, where ranks 0, 1, 3 ran all_reduce of 1,048,576 bytes (step 3, "
        "call 3 on their thread 1); lined up by order on the thread, which runs its calls in "
        "the order they were issued"
    )


def test_without_group_or_numbers_two_calls_swapped_on_one_rank_are_named(tmp_path):
    """Two all-reduces a step, 1 MB then 2 MB; rank 1 runs step 5's 2 MB first. By steps the
    counts agree (nothing to see); on the stream the order differs at call 9 (step 5's first)."""
    pair = [c for s in range(1, 9) for c in ((s, MB, 100.0), (s, 2 * MB, 300.0))]
    calls = {r: pair for r in range(3)}
    calls[1] = [(s, 2 * MB if s == 5 and b == MB else MB if s == 5 else b, t)
                for s, b, t in pair]  # fmt: skip
    found = traceview.load(job(tmp_path, calls, seq=False, group=False)).report.desync
    (sign,) = found.signs
    assert (sign.kind, sign.rank, sign.others, sign.step) == ("mismatch", 1, (0, 2), 5)
    assert sign.said.startswith(
        "rank 1 ran all_reduce of 2,097,152 bytes, then all_reduce of 1,048,576 bytes in another "
        "order, where ranks 0, 2 ran all_reduce of 1,048,576 bytes (step 5, call 9 on their "
        "stream 1)"
    )


def test_without_a_majority_order_nothing_is_said(tmp_path):
    # Two ranks that disagree: neither order is the usual one.
    calls = {0: everyone(), 1: everyone(s for s in range(1, 9) if s != 3)}
    found = traceview.load(job(tmp_path, calls, seq=False, group=False)).report.desync
    assert found.signs == () and found.keyed_by == "order on each stream"


def test_cpu_calls_that_name_no_group_and_no_number_are_not_judged(tmp_path):
    # Gloo's calls run on CPU threads, which may start queued calls in either order.
    folder = tmp_path / "gloo"
    folder.mkdir()
    for rank in (0, 1):
        events = [tb.step(1, 0, 1000)] + [
            tb.cpu_op("gloo:all_reduce", 100 + 200 * k, 100, tid=5) for k in range(3)
        ]
        tb.write(
            folder / f"rank{rank}.json", tb.document(events, rank=rank, world=2, backend="gloo")
        )
    found = traceview.load(folder).report.desync
    assert found is None or found.signs == ()
    if found is not None:
        assert found.keyed_by == "-" and found.groups == 0


def test_the_desync_finding_names_the_rank_the_group_and_the_call(tmp_path):
    calls = {r: everyone() for r in (0, 1, 3)}
    calls[2] = everyone(s for s in range(1, 9) if s != 3)
    (found,) = [f for f in traceview.load(job(tmp_path, calls)).findings if f.rule == "desync"]
    assert found.what == (
        "the ranks' collectives do not line up: rank 2 has no call at sequence number 3 of group "
        "7, where ranks 0, 1, 3 ran all_reduce of 1,048,576 bytes (step 3) and spent 0.100 ms in "
        "it"
    )
    assert found.numbers == {"signs": 1, "rank": 2, "group": "7", "kind": "missing", "seq": 3,
                             "step": 3, "others_ms": 0.1}  # fmt: skip


def test_a_profiling_window_that_ends_early_is_no_finding(tmp_path):
    calls = {r: everyone() for r in (0, 1)}
    calls[2] = everyone(range(1, 6))
    assert "desync" not in [
        f.rule for f in traceview.load(job(tmp_path, calls, last={2: 5})).findings
    ]


@pytest.mark.cli
def test_ranks_says_the_desync_signs_in_every_format(tmp_path):
    calls = {r: everyone() for r in (0, 1, 3)}
    calls[2] = everyone(s for s in range(1, 9) if s != 3)
    folder = job(tmp_path, calls)
    said = (
        "rank 2 has no call at sequence number 3 of group 7, where ranks 0, 1, 3 ran all_reduce "
        "of 1,048,576 bytes (step 3) and spent 0.100 ms in it"
    )
    table = cli("ranks", folder)
    assert table.code == 0, table.err
    # 8 calls on ranks 0, 1, 3 and 7 on rank 2.
    assert (
        f"  desync: 31 calls of 1 group lined up by sequence numbers: 1 sign\n    {said}\n"
    ) in table.out
    doc = json.loads(cli("ranks", folder, "--format", "json").out)["jobs"][0]["desync"]
    assert (doc["groups"], doc["calls"], doc["unjudged"]) == (1, 31, [])
    assert doc["signs"] == [
        {"kind": "missing", "pg": "7", "rank": 2, "others": [0, 1, 3], "seq": 3,
         "collective": "all_reduce", "bytes": MB, "step": 3, "others_dur_us": 100.0,
         "said": said, "trace_goes_on": None},
    ]  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(cli("ranks", folder, "--format", "csv").out)))
    assert [r["desync_signs"] for r in rows] == ["0", "0", "1", "0"]
