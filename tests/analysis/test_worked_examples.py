"""Every metric on the two hand-built traces of tests/tracebuild.py, answers computed by hand
(docs/metrics.md walks through the same numbers). Times in µs -> ns."""

import pytest

from tests import tracebuild as tb
from traceview import analyze_trace

US = 1000


def test_gpu_steps_totals_and_collectives(tmp_path):
    report = analyze_trace(tb.write(tmp_path / "gpu.json", tb.document(tb.gpu_example())))
    assert (report.rank, report.world_size, report.mode) == (0, 2, "gpu")
    s1, s2 = report.steps
    # Step 1 owns the kernels launched inside its span, including [80,130) that runs past it.
    assert s1.step == 1
    b = s1.breakdown
    assert (b.start_ns, b.end_ns) == (50 * US, 140 * US)
    assert b.compute_ns == 80 * US  # [50,130)
    assert b.comm_ns == 70 * US  # [70,140)
    assert b.overlap_ns == 60 * US  # [70,130)
    assert b.exposed_comm_ns == 10 * US  # [130,140)
    assert b.compute_only_ns == 20 * US  # [50,70)
    assert b.idle_ns == 0
    assert b.overlap_pct == pytest.approx(600 / 7)
    # Step 2: compute [140,170); the memcpy [170,175) is not compute and does not stretch it.
    b = s2.breakdown
    assert s2.step == 2
    assert (b.start_ns, b.end_ns) == (140 * US, 170 * US)
    assert (b.compute_ns, b.comm_ns, b.overlap_ns, b.idle_ns) == (30 * US, 0, 0, 0)
    assert b.overlap_pct is None
    # The kernel whose launch is not in the trace ran before the window: a row of its own.
    before = report.before_first_step
    assert before is not None and before.kernels == 1
    b = before.breakdown
    assert (b.start_ns, b.end_ns, b.compute_ns, b.comm_ns, b.idle_ns) == (
        20 * US,
        55 * US,
        35 * US,
        0,
        0,
    )
    # Whole trace: window [20,175), everything in it; compute [20,130) + [140,170).
    t = report.total
    assert t is not None
    assert (t.window_ns, t.compute_ns, t.comm_ns) == (155 * US, 140 * US, 70 * US)
    assert (t.overlap_ns, t.exposed_comm_ns, t.compute_only_ns) == (60 * US, 10 * US, 80 * US)
    assert t.idle_ns == 5 * US  # the memcpy's time
    assert t.overlap_pct == pytest.approx(600 / 7)
    (c,) = report.collectives
    assert (c.collective, c.count, c.total_ns, c.bytes, c.bytes_known) == (
        "all_reduce",
        1,
        70 * US,
        4000,
        1,
    )


def test_cpu_only_gloo_trace(tmp_path):
    doc = tb.document(tb.cpu_example(), backend="gloo")
    report = analyze_trace(tb.write(tmp_path / "cpu.json.gz", doc))
    assert report.mode == "cpu"
    (s,) = report.steps
    b = s.breakdown
    # Compute: top-level ops [5,25) [30,60) [62,70) [85,95), minus the collective call [40,45)
    # inside AccumulateGrad; the wait [70,80) is not compute. Comm: gloo [41,75) [90,110).
    assert (s.step, b.start_ns, b.end_ns) == (7, 0, 100 * US)
    assert b.compute_ns == 63 * US
    assert b.comm_ns == 44 * US  # clipped to the step: [41,75) + [90,100)
    assert b.overlap_ns == 28 * US  # [45,60) + [62,70) + [90,95)
    assert b.exposed_comm_ns == 16 * US
    assert b.compute_only_ns == 35 * US
    assert b.idle_ns == 21 * US
    assert b.overlap_pct == pytest.approx(2800 / 44)
    t = report.total
    assert t is not None
    assert (t.start_ns, t.end_ns) == (5 * US, 110 * US)
    assert (t.compute_ns, t.comm_ns, t.overlap_ns) == (63 * US, 54 * US, 28 * US)
    assert (t.exposed_comm_ns, t.idle_ns) == (26 * US, 16 * US)
    (c,) = report.collectives
    assert (c.collective, c.count, c.total_ns, c.bytes, c.bytes_known) == (
        "all_reduce",
        2,
        54 * US,
        4000,
        1,
    )


def test_cpu_comm_pattern_turns_only_the_matching_spans_into_communication(tmp_path):
    # The same Gloo job with aten::mm [5,25) named communication: it leaves compute (with
    # aten::addmm [6,20) inside it) and joins comm; the training thread's other ops stay compute.
    doc = tb.document(tb.cpu_example(), backend="gloo")
    path = tb.write(tmp_path / "cpu.json", doc)
    report = analyze_trace(path, comm_pattern="^aten::mm$")
    (s,) = report.steps
    b = s.breakdown
    assert (b.start_ns, b.end_ns) == (0, 100 * US)
    assert (b.compute_ns, b.comm_ns, b.overlap_ns) == (43 * US, 64 * US, 28 * US)
    assert (b.exposed_comm_ns, b.compute_only_ns, b.idle_ns) == (36 * US, 15 * US, 21 * US)
    t = report.total
    assert t is not None and (t.start_ns, t.end_ns) == (5 * US, 110 * US)
    assert (t.compute_ns, t.comm_ns, t.overlap_ns, t.idle_ns) == (
        43 * US,
        74 * US,
        28 * US,
        16 * US,
    )
    # Gloo's spans keep the collective of the calls that queued them.
    assert {c.collective for c in report.collectives} == {"all_reduce", "unknown"}


_ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def test_gpu_steps_from_their_own_compute_and_comm_kernels_only(tmp_path):
    """Step 1 launched only a memcpy: no breakdown. Step 2 only an all-reduce [120,150).
    Step 3 an all-reduce [205,215) launched before its compute [220,240)."""
    events = [
        tb.step(1, 0, 100),
        tb.step(2, 100, 100),
        tb.step(3, 200, 100),
        *(tb.launch(corr, ts) for corr, ts in ((1, 5), (2, 105), (3, 201), (4, 202))),
        tb.kernel("Memcpy HtoD (Pageable -> Device)", 10, 10, corr=1, cat="gpu_memcpy"),
        tb.kernel(_ALL_REDUCE, 120, 30, corr=2, stream=20),
        tb.kernel(_ALL_REDUCE, 205, 10, corr=3, stream=20),
        tb.kernel("volta_sgemm_128x64_nn", 220, 20, corr=4),
    ]
    report = analyze_trace(tb.write(tmp_path / "gpu.json", tb.document(events)))
    assert [s.step for s in report.steps] == [2, 3]
    b = report.steps[0].breakdown
    assert (b.start_ns, b.end_ns, b.compute_ns, b.comm_ns) == (120 * US, 150 * US, 0, 30 * US)
    assert (b.overlap_ns, b.exposed_comm_ns, b.idle_ns) == (0, 30 * US, 0)
    b = report.steps[1].breakdown
    assert (b.start_ns, b.end_ns, b.compute_ns, b.comm_ns) == (205 * US, 240 * US, 20 * US, 10 * US)
    assert (b.overlap_ns, b.exposed_comm_ns, b.idle_ns) == (0, 10 * US, 5 * US)


def test_gpu_steps_that_launched_no_compute_or_comm_have_no_breakdown(tmp_path):
    events = [
        tb.step(1, 0, 100),
        tb.launch(1, 5),
        tb.kernel("Memcpy HtoD (Pageable -> Device)", 10, 10, corr=1, cat="gpu_memcpy"),
    ]
    report = analyze_trace(tb.write(tmp_path / "gpu.json", tb.document(events)))
    assert report.mode == "gpu" and report.steps == ()


def test_concurrent_calls_share_the_exposed_time_once(tmp_path):
    # Compute [0,50); all-reduce A [40,100) and all-gather B [60,120) on two streams, at once.
    events = [
        tb.step(1, 0, 130),
        tb.launch(1, 0),
        tb.launch(2, 35),
        tb.launch(3, 55),
        tb.kernel("volta_sgemm_128x64_nn", 0, 50, corr=1),
        tb.collective(tb.DDP_ALL_REDUCE, 40, 60, 2, "allreduce", (1000, 1000), stream=20),
        tb.collective("ncclDevKernel_AllGather_RING_LL", 60, 60, 3, "allgather", (500, 1000),
                      stream=21),
    ]  # fmt: skip
    report = analyze_trace(tb.write(tmp_path / "two.json", tb.document(events)))
    calls = report.calls.sort("start_ns")
    # Each call alone: A [50,100) = 50, B [60,120) = 60 with no compute beside them.
    assert calls["exposed_ns"].to_list() == [50 * US, 60 * US]
    # Shares: A [40,100) \ C = 50; B only past A's end, [100,120) = 20. They sum to the union
    # [50,120) = 70 — the step's exposed communication — never to 110.
    assert calls["exposed_share_ns"].to_list() == [50 * US, 20 * US]
    assert report.steps[0].breakdown.exposed_comm_ns == 70 * US
