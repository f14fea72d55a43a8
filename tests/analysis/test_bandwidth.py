"""Bandwidth over transfer time once ranks are aligned (nccl-tests times after a barrier), and a
labelled lower bound over whole durations where they are not: hand-built 2-rank jobs, times in
µs, all-reduces of 1000 floats (4000 bytes) on a group of 2 (bus factor 2(2−1)/2 = 1)."""

from __future__ import annotations

import pytest

import traceview
from tests import tracebuild as tb

ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def rank_trace(folder, rank, calls):
    """This rank's all-reduces at `calls` [(start, end)], on one host (one clock)."""
    events = [tb.step(1, 0, 2000)]
    for k, (start, end) in enumerate(calls, 1):
        events += [
            tb.launch(k, start - 5),
            tb.collective(ALL_REDUCE, start, end - start, k, "allreduce", (1000, 1000)),
        ]
    return tb.write(folder / f"rank{rank}.json", tb.document(events, rank=rank, host_name="h"))


def test_aligned_ranks_get_bandwidth_over_the_transfer(tmp_path):
    # Rank 1 arrives 30 µs late at each call: rank 0 runs 50 µs, of which 20 are transfer.
    rank_trace(tmp_path, 0, [(100, 150), (300, 350), (500, 550)])
    rank_trace(tmp_path, 1, [(130, 150), (330, 350), (530, 550)])
    job = traceview.load(tmp_path)
    assert job.cross_rank.aligned
    calls = job.calls.sort("rank", "start_ns")
    # 4000 B / 20 µs = 0.2 GB/s on both ranks (not rank 0's 4000 B / 50 µs = 0.08).
    assert calls["transfer_ns"].to_list() == [20_000] * 6
    assert calls["algbw_gbps"].to_list() == pytest.approx([0.2] * 6)
    assert calls["busbw_gbps"].to_list() == pytest.approx([0.2] * 6)
    assert calls["bandwidth_on"].to_list() == ["transfer"] * 6


@pytest.mark.cli
def test_a_lone_rank_gets_a_lower_bound_said_in_every_format(tmp_path):
    trace = rank_trace(tmp_path, 0, [(100, 150), (300, 350), (500, 550)])
    job = traceview.load(trace)
    assert job.calls["algbw_gbps"].to_list() == pytest.approx([0.08] * 3)  # 4000 B / 50 µs
    assert job.calls["bandwidth_on"].to_list() == ["duration"] * 3
    from tests.cli.run_cli import traceview as cli

    table = cli("collectives", trace)
    assert "≥0.08" in table.out and "≥ a lower bound: over the call's whole duration" in table.out
    doc = cli("collectives", trace, "--format", "json")
    assert '"bandwidth_on": "duration"' in doc.out
    csv = cli("collectives", trace, "--format", "csv")
    assert "bandwidth_on" in csv.out.splitlines()[0] and ",duration," in csv.out
