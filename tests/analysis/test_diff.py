"""`traceview diff` (docs/metrics.md "Diff"): two hand-built runs whose answers are worked out by
hand, and two real harness runs that differ only in DDP's bucket size."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

import traceview
from tests import tracebuild as tb
from tests.cli.run_cli import traceview as cli

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
MB4 = 4_000_000


def run(root: Path, name: str, comm_us: float | list[float]) -> Path:
    """One rank, four steps of 1,000 µs, each launching at its 1st and 2nd µs compute [10, 610)
    and a 4 MB all-reduce from 510 for `comm_us` (or each step's). With 200 µs: 100 overlapped,
    100 exposed, the step's window [10, 710); with 400: 300 exposed, [10, 910)."""
    events: list[tb.Event] = []
    per_step = comm_us if isinstance(comm_us, list) else [comm_us] * 4
    for s, comm_us in enumerate(per_step):
        base = 1000 * s
        events += [
            tb.step(s + 1, base, 1000), tb.launch(10 * s + 1, base + 1), tb.launch(10 * s + 2, base + 2),
            tb.kernel("volta_sgemm_128x64_nn", base + 10, 600, corr=10 * s + 1),
            tb.kernel(ALLREDUCE, base + 510, comm_us, corr=10 * s + 2, stream=20,
                      **{"Collective name": "allreduce", "In msg nelems": MB4 // 4,
                         "Out msg nelems": MB4 // 4, "dtype": "Float", "Group size": 2}),
        ]  # fmt: skip
    folder = root / name
    folder.mkdir()
    tb.write(folder / "rank0.json", tb.document(events, rank=0, world=2))
    return folder


def test_the_step_change_is_split_where_it_happened(tmp_path):
    a, b = run(tmp_path, "a", 200), run(tmp_path, "b", 400)
    found = traceview.load_runs([a, b]).diff()
    assert found.rank_steps == (4, 4)
    # Every step alike: no spread, so any change is beyond noise and none is within.
    assert (found.step_ms.before, found.step_ms.after) == pytest.approx((0.7, 0.9))
    assert found.step_ms.noise == 0 and found.step_ms.within_noise is False
    parts = {p.what: (p.before, p.after, p.within_noise) for p in found.parts}
    assert parts == {
        "compute": (pytest.approx(0.6), pytest.approx(0.6), True),
        "exposed communication": (pytest.approx(0.1), pytest.approx(0.3), False),
        "idle": (0.0, 0.0, True),
    }
    (coll,) = found.collectives
    assert coll.name == "all_reduce"
    assert (coll.calls.before, coll.calls.after) == (1.0, 1.0)
    assert (coll.megabytes.before, coll.megabytes.after) == pytest.approx((4.0, 4.0))
    assert (coll.duration_ms.before, coll.duration_ms.after) == pytest.approx((0.2, 0.4))
    assert (coll.exposed_ms.before, coll.exposed_ms.after) == pytest.approx((0.1, 0.3))
    top = found.kernels[0]
    assert (top.what, top.before, top.after) == (ALLREDUCE, pytest.approx(0.2), pytest.approx(0.4))


def test_the_kernels_come_from_each_ranks_time_per_step_and_name_not_its_intervals(tmp_path):
    a, b = run(tmp_path, "a", 200), run(tmp_path, "b", [200, 200, 400, 400])
    runs = traceview.load_runs([a, b])
    (rank,) = runs.jobs[1].ranks
    assert rank.intervals is None  # loaded without them, as the CLI loads
    assert rank.work.sort("step", "name").rows() == [
        (0, s, name, ns)
        for s, comm_ns in ((1, 200_000), (2, 200_000), (3, 400_000), (4, 400_000))
        for name, ns in sorted([(ALLREDUCE, comm_ns), ("volta_sgemm_128x64_nn", 600_000)])
    ]
    found = runs.diff()
    assert {k.what: (k.before, k.after) for k in found.kernels} == {
        ALLREDUCE: (pytest.approx(0.2), pytest.approx(0.3)),
        "volta_sgemm_128x64_nn": (pytest.approx(0.6), pytest.approx(0.6)),
    }
    assert all("intervals" not in vars(job) for job in runs.jobs)  # never read again


@pytest.mark.cli
def test_diff_in_every_format(tmp_path):
    a, b = run(tmp_path, "a", 200), run(tmp_path, "b", 400)
    table = cli("diff", a, b)
    assert table.code == 0, table.err
    assert (
        "  exposed communication  0.100 ms  0.300 ms  +0.200 ms (+200%)  beyond noise" in table.out
    )
    doc = json.loads(cli("diff", a, b, "--format", "json").out)
    assert doc["command"] == "diff" and doc["rank_steps"] == [4, 4]
    assert round(doc["step_ms"]["change"], 6) == 0.2
    rows = list(csv.DictReader(io.StringIO(cli("diff", a, b, "--format", "csv").out)))
    exposed = next(
        r for r in rows if r["section"] == "step" and r["name"] == "exposed communication"
    )
    assert (round(float(exposed["change"]), 6), exposed["within_noise"]) == (0.2, "false")
    ranked = [r for r in rows if r["section"] == "rank"]
    assert {r["name"] for r in ranked} == {"0"} and len(ranked) == 4  # no waiting: one rank
    assert doc["steps"] == [4, 4] and [m["rank"] for m in doc["most_changed"]] == [0, 0]
    assert [m["figure"] for m in doc["most_changed"]] == ["compute", "exposed communication"]
    one = cli("diff", a)
    assert one.code != 0 and "these paths hold 1" in one.err


@pytest.mark.torchrun
def test_two_harness_runs_differing_in_bucket_size_show_where_exposure_moved(tmp_path):
    pytest.importorskip("torch")
    from tests.harness.conftest import SMALL, sweep

    def ddp(out: Path, cap_mb: str) -> Path:
        done = sweep(out, "--strategies", "ddp", "--dp", "2", "--device", "cpu",
                     "--bucket-cap-mb", cap_mb, "--", *SMALL)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return out / json.loads((out / "index.json").read_text())["runs"][0]["path"]

    small = ddp(tmp_path / "small", "1")  # 1 MB buckets
    one = ddp(tmp_path / "one", "1000")  # one bucket of every gradient
    found = traceview.load_runs([small, one]).diff()
    # What differs, from the run records: the bucket cap alone.
    assert [(c.what, c.before, c.after) for c in found.setup] == [("bucket_cap_mb", "1", "1000")]
    # The parts add up to the step, before and after.
    assert sum(p.change for p in found.parts) == pytest.approx(found.step_ms.change, abs=1e-9)
    labels = {c.name: c for c in found.labels}
    # 1 MB buckets: several; one bucket of everything: bucket 0 alone.
    assert len(labels) >= 3
    assert all(labels[n].calls.after == 0 for n in labels if n != "bucket 0")
    assert labels["bucket 0"].calls.after == 1.0
    # The exposed communication after is all bucket 0's, where it happened.
    exposed_after = next(p.after for p in found.parts if p.what == "exposed communication")
    assert labels["bucket 0"].exposed_ms.after == pytest.approx(exposed_after, rel=0.05)


@pytest.mark.cli
def test_two_step_ranges_of_one_run(tmp_path):
    # Steps 1-2 run the all-reduce for 200 µs, steps 3-4 for 400: the same split as two runs
    # (test_the_step_change_is_split_where_it_happened), over 2 rank-steps a side.
    job = run(tmp_path, "job", [200, 200, 400, 400])
    found = traceview.load_runs([job]).diff({1, 2}, {3, 4})
    assert found.rank_steps == (2, 2)
    assert (found.step_ms.before, found.step_ms.after) == pytest.approx((0.7, 0.9))
    parts = {p.what: (p.before, p.after) for p in found.parts}
    assert parts["exposed communication"] == pytest.approx((0.1, 0.3))
    (coll,) = found.collectives
    assert (coll.duration_ms.before, coll.duration_ms.after) == pytest.approx((0.2, 0.4))
    assert (found.kernels[0].before, found.kernels[0].after) == pytest.approx((0.2, 0.4))
    table = cli("diff", job, "--steps-a", "1-2", "--steps-b", "3-4")
    assert table.code == 0, table.err
    assert f"A: {job} steps 1-2 (2 rank-steps)" in table.out
    assert (
        "  exposed communication  0.100 ms  0.300 ms  +0.200 ms (+200%)  beyond noise" in table.out
    )
    alone = cli("diff", job, "--steps-a", "1-2")
    assert alone.code == 2 and "one run with both step ranges" in alone.err


@pytest.mark.cli
def test_a_run_without_measured_steps_says_so_in_every_format(tmp_path):
    a = run(tmp_path, "a", 200)
    b = tmp_path / "b"
    b.mkdir()
    events = [tb.launch(1, 1), tb.kernel("volta_sgemm_128x64_nn", 10, 600, corr=1)]  # no steps
    tb.write(b / "rank0.json", tb.document(events, rank=0, world=2))
    said = "has no profiler steps with their communication measured: its figures are 0"
    assert said in cli("diff", a, b).out
    doc = json.loads(cli("diff", a, b, "--format", "json").out)
    assert any(said in c for c in doc["caveats"])
    rows = list(csv.DictReader(io.StringIO(cli("diff", a, b, "--format", "csv").out)))
    assert rows and all(said in r["caveats"] for r in rows)


GEMM = "volta_sgemm_128x64_nn"


def ranks_run(root: Path, name: str, compute_us: dict[int, list[float]], **extra) -> Path:
    """A run of len(compute_us) ranks (rank: each step's compute), four steps 10 ms apart:
    per step a GEMM [10, 10 + compute) then a 100 µs all-reduce, so the window is compute +
    100 µs, all of the all-reduce exposed."""
    folder = root / name
    folder.mkdir()
    for rank, per_step in compute_us.items():
        events: list[tb.Event] = []
        for s, c in enumerate(per_step):
            base = 10_000 * s
            events += [
                tb.step(s + 1, base, 9_000), tb.launch(10 * s + 1, base + 1),
                tb.launch(10 * s + 2, base + 2),
                tb.kernel(GEMM, base + 10, c, corr=10 * s + 1),
                tb.kernel(ALLREDUCE, base + 10 + c, 100, corr=10 * s + 2, stream=20,
                          **{"Collective name": "allreduce", "In msg nelems": 1024,
                             "Out msg nelems": 1024, "dtype": "Float",
                             "Group size": len(compute_us)}),
            ]  # fmt: skip
        doc = tb.document(events, rank=rank, world=len(compute_us), **extra)
        tb.write(folder / f"rank{rank}.json", doc)
    return folder


def test_one_rank_whose_compute_slowed_is_named_where_the_mean_hides_it(tmp_path):
    """Eight ranks whose steps alternate 600 and 1,400 µs of compute; in B rank 5's run 3×.
    Over all ranks, the compute per step's means [0.6, 1.4, 0.6, 1.4] → [0.75, 1.75, 0.75,
    1.75] ms: +0.25 ms against a noise of 2√(0.2133/4 + 0.3333/4) = 0.739 ms (the steps the
    samples): within noise. Rank 5 against itself: +2.0 ms against 2√(0.2133/4 + 1.92/4) =
    1.461 ms: beyond noise, and named."""
    steps = [600, 1400, 600, 1400]
    a = ranks_run(tmp_path, "a", dict.fromkeys(range(8), steps))
    slow = {r: [3 * c for c in steps] if r == 5 else steps for r in range(8)}
    b = ranks_run(tmp_path, "b", slow)
    found = traceview.load_runs([a, b]).diff()
    assert found.rank_steps == (32, 32) and found.steps == (4, 4)
    compute = next(p for p in found.parts if p.what == "compute")
    assert (compute.before, compute.after) == pytest.approx((1.0, 1.25))
    assert compute.noise == pytest.approx(2 * (0.6400 / 3 / 4 + 1.0 / 3 / 4) ** 0.5, abs=1e-9)
    assert compute.noise == pytest.approx(0.7393, abs=1e-4) and compute.within_noise
    assert len(found.ranks) == 8
    worst = found.most_changed("compute")
    assert worst is not None and worst.rank == 5
    assert (worst.compute.before, worst.compute.after) == pytest.approx((1.0, 3.0))
    assert worst.compute.noise == pytest.approx(1.4606, abs=1e-4)
    assert worst.compute.within_noise is False
    others = [r for r in found.ranks if r.rank != 5]
    assert all(r.compute.change == pytest.approx(0) for r in others)


def test_what_differs_in_the_runs_set_up_is_said(tmp_path):
    a100 = [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}]
    h100 = [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]
    a = ranks_run(tmp_path, "a", dict.fromkeys(range(2), [600] * 4), deviceProperties=a100)
    b = ranks_run(tmp_path, "b", dict.fromkeys(range(4), [600] * 4), deviceProperties=h100)
    found = traceview.load_runs([a, b]).diff()
    said = {c.what: (c.before, c.after) for c in found.setup}
    assert said["GPU"] == ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3")
    assert said["world size"] == ("2", "4")
    assert "backend" not in said  # the same on both: not said
    same = traceview.load_runs([a]).diff({1, 2}, {3, 4})
    assert same.setup == ()  # one run against itself


@pytest.mark.cli
def test_the_gate_fails_a_run_slower_beyond_its_noise_and_passes_the_rest(tmp_path):
    """A: every step 0.7 ms, B: 0.9 ms, no spread: +28.6 %, all of it beyond the noise (0)."""
    a, b = run(tmp_path, "a", 200), run(tmp_path, "b", 400)
    failed = cli("diff", a, b, "--fail-if-slower", "25")
    assert failed.code == 4, failed.err
    assert "slower by more than 25% beyond the noise (exit 4)" in failed.err
    passed = cli("diff", a, b, "--fail-if-slower", "30", "--format", "json")
    assert passed.code == 0 and "not slower by more than 30%" in passed.err
    faster = cli("diff", b, a, "--fail-if-slower", "0")
    assert faster.code == 0, faster.err
    # One step a side: no spread to judge by, said, and not failed.
    one = cli("diff", a, b, "--steps-a", "1", "--steps-b", "1", "--fail-if-slower", "0")
    assert one.code == 0 and "not judged: fewer than two profiler steps" in one.err
    # Noise wider than the change: not failed (steps of 200 and 600 µs of all-reduce).
    noisy = run(tmp_path, "noisy", [200, 600, 200, 600])
    wide = cli("diff", a, noisy, "--fail-if-slower", "0")
    assert wide.code == 0, wide.err
    bad = cli("diff", a, b, "--fail-if-slower", "fast")
    assert bad.code == 2 and "not a percentage" in bad.err
