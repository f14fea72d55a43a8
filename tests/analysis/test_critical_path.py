"""The critical path across ranks (docs/metrics.md "Critical path"): hand-built jobs whose path
and attribution were worked out by hand below each (times in µs as written, ns as compared)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

import traceview
from tests import tracebuild as tb
from tests.analysis.test_cross_rank import rank_trace
from tests.cli.run_cli import traceview as cli
from tests.documents.test_schemas import validate

US = 1000
AR = tb.DDP_ALL_REDUCE
SEQ = {"Process Group Name": "0"}


def gpu_kernel(name: str, ts: float, dur: float, corr: int, launched: float, **kw) -> list:
    return [tb.launch(corr, launched), tb.kernel(name, ts, dur, corr=corr, **kw)]


def all_reduce(ts: float, end: float, corr: int, launched: float, seq: int) -> list:
    return [
        tb.launch(corr, launched),
        tb.collective(AR, ts, end - ts, corr, "allreduce", (1 << 18, 1 << 18), **SEQ, Seq=seq),
    ]


def late_backward(folder: Path) -> Path:
    """Step 1 on two ranks: forward [100, 200), backward [200, b), the gradient all-reduce from
    b to 650 (every rank leaves it together), the optimizer [650, 700). Rank 0's backward ends at
    400, rank 1's at 550: rank 0 waits in the all-reduce for rank 1 from 400 to 550."""
    folder.mkdir(parents=True, exist_ok=True)
    for rank, backward_end in ((0, 400), (1, 550)):
        events = [
            tb.step(1, 0, 1000),
            *gpu_kernel("forward", 100, 100, 1, launched=90),
            *gpu_kernel("backward", 200, backward_end - 200, 2, launched=190),
            *all_reduce(backward_end, 650, 3, launched=backward_end - 5, seq=1),
            *gpu_kernel("optimizer", 650, 50, 4, launched=600),
        ]
        tb.write(folder / f"rank{rank}.json", tb.document(events, rank=rank, world=2))
    return folder


def segments(path: traceview.CriticalPath, step: int = 1) -> list[tuple]:
    rows = path.segments.filter(path.segments["step"] == step)
    return list(
        rows.select("rank", "category", "start_ns", "end_ns", "work", "collective").iter_rows()
    )


def test_a_late_backward_on_rank_1_sets_the_step(tmp_path):
    found = traceview.load(late_backward(tmp_path / "job")).critical_path()
    # Both ranks end at 700; the path begins on rank 0 (the lowest of the tied): its optimizer
    # [650, 700). Before it, the all-reduce (ended at 650; rank 0's own stream last ran at 400).
    # Rank 1 arrived last, at 550: the transfer [550, 650) is on the path, rank 0's wait
    # [400, 550) is not; the path moves to rank 1 at 550 and runs back through its backward
    # [200, 550) and forward [100, 200) to the step's start, 100.
    assert segments(found) == [
        (1, "compute", 100 * US, 550 * US, 2, None),
        (0, "transfer", 550 * US, 650 * US, 1, "all_reduce"),
        (0, "compute", 650 * US, 700 * US, 1, None),
    ]
    assert found.steps.rows() == [(1, 100 * US, 700 * US, 1)]
    # 450 + 100 + 50 = 600 µs, the step from the first rank's start to the last rank's end.
    assert found.attribution(1) == {
        (1, "compute"): 450 * US, (0, "transfer"): 100 * US, (0, "compute"): 50 * US
    }  # fmt: skip
    assert found.total_ns == 600 * US and found.reason is None


def test_gaps_are_host_launch_when_the_work_was_launched_late_else_idle(tmp_path):
    # One rank, one stream: k1 [100, 150); k2 [180, 200) launched at 170, after k1 ended: the
    # GPU waited for the host (host launch, 30); a memcpy [200, 210); k3 [230, 260) launched at
    # 120, long before: the gap [210, 230) is idle (20).
    events = [
        tb.step(1, 0, 1000),
        *gpu_kernel("k1", 100, 50, 1, launched=90),
        *gpu_kernel("k2", 180, 20, 2, launched=170),
        *gpu_kernel("Memcpy HtoD (Pageable -> Device)", 200, 10, 3, launched=195,
                    cat="gpu_memcpy"),
        *gpu_kernel("k3", 230, 30, 4, launched=120),
    ]  # fmt: skip
    trace = tb.write(tmp_path / "rank0.json", tb.document(events, rank=0, world=1))
    found = traceview.load(trace).critical_path()
    assert segments(found) == [
        (0, "compute", 100 * US, 150 * US, 1, None),
        (0, "host launch", 150 * US, 180 * US, 0, None),
        (0, "compute", 180 * US, 200 * US, 1, None),
        (0, "memory", 200 * US, 210 * US, 1, None),
        (0, "idle", 210 * US, 230 * US, 0, None),
        (0, "compute", 230 * US, 260 * US, 1, None),
    ]
    assert found.total_ns == 160 * US


@pytest.mark.parametrize(("own_end", "expected"), [
    # kA ends at 200, 0.5 µs before the all-reduce on the other stream: kB follows its own
    # stream's kA (compute 100 + 49, idle 1: kB was launched at 95).
    (200, [(0, "compute", 100, 200, 1, None), (0, "idle", 200, 201, 0, None),
           (0, "compute", 201, 250, 1, None)]),
    # kA ends at 150, 50.5 µs before the all-reduce: kB waited for the all-reduce (a one-rank
    # job's collective is unmatched), launched at 115, after the step began at 100.
    (150, [(0, "host launch", 100, 120, 0, None), (0, "unmatched", 120, 200.5, 1, "all_reduce"),
           (0, "idle", 200.5, 201, 0, None), (0, "compute", 201, 250, 1, None)]),
])  # fmt: skip
def test_the_lane_s_own_work_comes_first_unless_other_work_ended_well_after(
    tmp_path, own_end, expected
):
    events = [
        tb.step(1, 0, 1000),
        *gpu_kernel("kA", 100, own_end - 100, 1, launched=90),
        *all_reduce(120, 200.5, 2, launched=115, seq=1),
        *gpu_kernel("kB", 201, 49, 3, launched=95),
    ]
    trace = tb.write(tmp_path / "rank0.json", tb.document(events, rank=0, world=1))
    found = traceview.load(trace).critical_path()
    assert segments(found) == [
        (r, c, round(a * US), round(b * US), w, n) for r, c, a, b, w, n in expected
    ]


def test_a_last_rank_whose_call_is_in_another_step_leaves_waiting_on_the_path(tmp_path):
    # Rank 1's step 1 ends on the host at 640: it launches the all-reduce (at 645) in step 2.
    # Step 1: rank 0 computes [100, 200), then waits in the all-reduce [200, 700) for rank 1,
    # which arrives at 650; rank 1's call is not step 1's, so its work is not followed: rank 0's
    # waiting [200, 650) and transfer [650, 700) stay on the path.
    rank0 = [
        tb.step(1, 0, 1000), tb.step(2, 1000, 1000),
        *gpu_kernel("compute", 100, 100, 1, launched=90),
        *all_reduce(200, 700, 2, launched=195, seq=1),
        *gpu_kernel("compute", 1100, 100, 3, launched=1050),
    ]  # fmt: skip
    rank1 = [
        tb.step(1, 0, 640), tb.step(2, 640, 1360),
        *gpu_kernel("compute", 100, 500, 1, launched=90),
        *all_reduce(650, 700, 2, launched=645, seq=1),
        *gpu_kernel("compute", 700, 50, 3, launched=646),
    ]  # fmt: skip
    folder = tmp_path / "job"
    folder.mkdir()
    for rank, events in enumerate((rank0, rank1)):
        tb.write(folder / f"rank{rank}.json", tb.document(events, rank=rank, world=2))
    found = traceview.load(folder).critical_path(steps={1})
    assert segments(found) == [
        (0, "compute", 100 * US, 200 * US, 1, None),
        (0, "waiting", 200 * US, 650 * US, 0, "all_reduce"),
        (0, "transfer", 650 * US, 700 * US, 1, "all_reduce"),
    ]
    assert found.steps.rows() == [(1, 100 * US, 700 * US, 0)]


@pytest.mark.cli
def test_ranks_not_aligned_get_no_path_and_the_reason(tmp_path):
    # One clock, and rank 1's calls all begin after rank 0's have ended (test_cross_rank.py).
    rank_trace(tmp_path, 0, 0, [(100, 150), (200, 250), (300, 350)], "host")
    rank_trace(tmp_path, 1, 0, [(500, 550), (600, 650), (700, 750)], "host")
    found = traceview.load(tmp_path).critical_path()
    assert found.steps.height == 0 and found.segments.height == 0
    assert found.reason is not None and found.reason.startswith("the ranks are not aligned")
    result = cli("critical-path", tmp_path)
    assert result.code == 0 and "none: the ranks are not aligned" in result.out
    (row,) = csv.DictReader(io.StringIO(cli("critical-path", tmp_path, "--format", "csv").out))
    assert row["step"] == "" and row["caveats"].startswith("the ranks are not aligned")


def test_a_step_missing_on_a_rank_is_left_out_and_said(tmp_path):
    folder = late_backward(tmp_path / "job")
    doc = json.loads((folder / "rank1.json").read_text())
    doc["traceEvents"] += [tb.step(2, 1000, 1000), *gpu_kernel("more", 1100, 50, 9, launched=1010)]
    tb.write(folder / "rank1.json", doc)
    found = traceview.load(folder).critical_path()
    assert found.steps["step"].to_list() == [1] and found.left_out == 1
    assert found.reason is not None and "1 step left out" in found.reason


@pytest.mark.cli
def test_every_format_says_the_same_path(tmp_path):
    folder = late_backward(tmp_path / "job")
    doc = validate("critical-path", cli("critical-path", folder, "--format", "json").out)
    (job,) = doc["jobs"]
    (step,) = job["steps"]
    assert (job["found"], job["ranks"], step["step_us"], step["crossings"]) == (True, 2, 600, 1)
    assert [(p["rank"], p["category"], p["us"]) for p in step["parts"]] == [
        (1, "compute", 450), (0, "transfer", 100), (0, "compute", 50)
    ]  # fmt: skip
    assert [(g["rank"], g["category"], g["at_us"], g["us"]) for g in step["segments"]] == [
        (1, "compute", 0, 450), (0, "transfer", 450, 100), (0, "compute", 550, 50)
    ]  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(cli("critical-path", folder, "--format", "csv").out)))
    assert [(r["rank"], r["category"], float(r["us"])) for r in rows] == [
        ("1", "compute", 450), ("0", "transfer", 100), ("0", "compute", 50)
    ]  # fmt: skip
    assert sum(float(r["us"]) for r in rows) == float(rows[0]["step_us"])
    table = cli("critical-path", folder).out
    assert "1 by all_reduce" in table and "75.0%" in table  # rank 1's compute: 450 of 600


@pytest.mark.cli
def test_export_marks_the_path_on_each_rank(tmp_path):
    folder = late_backward(tmp_path / "job")
    out = tmp_path / "timeline.json"
    assert cli("export", folder, "-o", out).code == 0
    events = json.loads(out.read_text())["traceEvents"]
    track = {
        (e["pid"], e["tid"]) for e in events
        if e["ph"] == "M" and e["name"] == "thread_name" and e["args"]["name"] == "critical path"
    }  # fmt: skip
    marks = sorted(
        (e["pid"], e["name"], e["ts"], e["dur"], e["args"]["ms_by_category"]) for e in events
        if e["ph"] == "X" and (e["pid"], e["tid"]) in track
    )  # fmt: skip
    # The timeline starts at the first kernel (100 µs): a leg of the path per rank, named by
    # its largest part, its time per category in its arguments.
    assert marks == [(0, "path: transfer", 450.0, 150.0, "transfer 0.1, compute 0.05"),
                     (1, "path: compute", 0.0, 450.0, "compute 0.45")]  # fmt: skip


def test_the_real_sampled_job_s_path_tiles_every_step():
    folder = Path(__file__).parents[1] / "fixtures" / "traces" / "nccl_sampled_w128"
    found = traceview.load(folder).critical_path()
    # Rank 1 arrived last at every matched call (`ranks`): the path never leaves it.
    assert found.steps["step"].to_list() == [551, 552]
    assert found.steps["crossings"].to_list() == [0, 0]
    assert set(found.segments["rank"].to_list()) == {1}
    for step, start, end, _ in found.steps.iter_rows():
        mine = found.segments.filter(found.segments["step"] == step).sort("start_ns")
        # The segments tile the step: each begins where the one before ended.
        assert mine["start_ns"][0] == start and mine["end_ns"][-1] == end
        assert (mine["start_ns"][1:] == mine["end_ns"][:-1]).all()
        assert sum(found.attribution(step).values()) == end - start


def test_a_cpu_job_s_path_has_no_host_launch_and_tiles_every_step():
    # The sample sweep's ZeRO-3 run at DP 2 (Gloo, CPU only): its gloo spans were issued by
    # calls on the training thread, but no device waits for a host there: every gap is idle.
    folder = Path(__file__).parents[2] / "sample_traces" / "cpu_sweep" / "zero3-dp2"
    found = traceview.load(folder).critical_path()
    assert found.steps.height == 2 and found.steps["crossings"].sum() > 0
    categories = set(found.segments["category"].to_list())
    assert "host launch" not in categories and {"compute", "transfer", "idle"} <= categories
    for step, start, end, _ in found.steps.iter_rows():
        assert sum(found.attribution(step).values()) == end - start


def test_keys_too_large_for_one_search_are_searched_a_few_groups_at_a_time(monkeypatch):
    # A trace of many long steps makes (group, lane, time) keys too large for one int64 search;
    # the walk then searches a few groups at a time. Forced here on a real job, the path is the
    # same to the nanosecond.
    from traceview.analysis import path_walk

    folder = Path(__file__).parents[2] / "sample_traces" / "cpu_sweep" / "ddp-dp4"
    whole = traceview.load(folder).critical_path()
    # A step's span × the lanes: about 2**31.5 ns here, so 2 of the 8 (rank, step) groups at a time.
    monkeypatch.setattr(path_walk, "KEY_LIMIT", 2**33)
    searched = []
    search = path_walk._search
    monkeypatch.setattr(path_walk, "_search", lambda *a: searched.append(1) or search(*a))
    chunked = traceview.load(folder).critical_path()
    assert len(searched) >= 4  # the work's queries alone span 4 chunks of 2 groups
    assert chunked.segments.equals(whole.segments) and chunked.steps.equals(whole.steps)


def gloo_rank(compute_us: float, arrive_us: float, after_us: float, resume_us: float = 710) -> list:
    """A CPU-only (Gloo) rank: step 1 = [0,1000) µs; the training thread computes [0, C),
    calls all_reduce at C + 5; the runloop thread's gloo:all_reduce runs [arrive, 700); the
    training thread computes again [resume, resume + after)."""
    dims = {"Input Dims": [[1000]], "Input type": ["float"]}
    return [
        tb.thread_name(1, "thread 1 (python3)"),
        tb.thread_name(2, "thread 2 (pt_gloo_runloop)"),
        tb.step(1, 0, 1000),
        tb.cpu_op("aten::mm", 0, compute_us),
        tb.cpu_op("c10d::allreduce_", compute_us + 5, 5,
                  **{"Input Dims": [[[1000]]], "Input type": ["TensorList"]}),
        tb.span("gloo:all_reduce", arrive_us, 700 - arrive_us, tid=2, **dims),
        tb.cpu_op("aten::add", resume_us, after_us),
    ]  # fmt: skip


def gloo_job(folder: Path, ranks: list[tuple[float, ...]]) -> Path:
    """A Gloo job of gloo_rank's ranks, one (compute, arrive, after[, resume]) each."""
    folder.mkdir()
    for rank, shape in enumerate(ranks):
        events = gloo_rank(*shape)
        tb.write(folder / f"rank{rank}.json", tb.document(events, rank=rank, backend="gloo"))
    return folder


def test_a_gloo_job_s_path_crosses_to_the_rank_that_arrived_last(tmp_path):
    # Rank 0 computes [0,300) and arrives at 310; rank 1 computes [0,600) and arrives at 610;
    # both leave at 700, then compute [710,900) and [710,880).
    folder = gloo_job(tmp_path / "job", [(300, 310, 190), (600, 610, 170)])
    found = traceview.load(folder).critical_path()
    # Both step spans end at 1000: the path begins on rank 0, idle [900,1000) after its last
    # op; its compute [710,900); idle [700,710); the all-reduce, whose last rank is rank 1
    # (arrived 610): transfer [610,700) on the path, rank 0's wait [310,610) not; on rank 1,
    # idle [600,610) and its compute [0,600) back to the step's start. No host launch.
    assert segments(found) == [
        (1, "compute", 0, 600 * US, 1, None),
        (1, "idle", 600 * US, 610 * US, 0, None),
        (0, "transfer", 610 * US, 700 * US, 1, "all_reduce"),
        (0, "idle", 700 * US, 710 * US, 0, None),
        (0, "compute", 710 * US, 900 * US, 1, None),
        (0, "idle", 900 * US, 1000 * US, 0, None),
    ]
    assert found.steps.rows() == [(1, 0, 1000 * US, 1)]
    assert sum(found.attribution(1).values()) == 1000 * US
    # Each segment names the work that takes most of it; gaps name none.
    assert found.segments["top_work"].to_list() == [
        "aten::mm", None, "gloo:all_reduce", None, "aten::add", None
    ]  # fmt: skip


def test_a_cpu_thread_that_resumes_before_the_collective_s_span_ends_follows_it(tmp_path):
    # As above, but rank 0's training thread resumes at 690, 10 µs before its gloo span ends
    # (Gloo signals the result, then its span goes on): the op at 690 follows a 390 µs gap
    # on its own thread and starts in the span's last tenth, so it waited for the all-reduce.
    folder = gloo_job(tmp_path / "job", [(300, 310, 190, 690), (600, 610, 170, 710)])
    found = traceview.load(folder).critical_path()
    # The all-reduce is on the path up to 690, its transfer from rank 1's arrival at 610 — not
    # rank 0's idle [300,690) and compute [0,300), which the walk by end times alone gave.
    assert segments(found) == [
        (1, "compute", 0, 600 * US, 1, None),
        (1, "idle", 600 * US, 610 * US, 0, None),
        (0, "transfer", 610 * US, 690 * US, 1, "all_reduce"),
        (0, "compute", 690 * US, 880 * US, 1, None),
        (0, "idle", 880 * US, 1000 * US, 0, None),
    ]
    assert sum(found.attribution(1).values()) == 1000 * US
