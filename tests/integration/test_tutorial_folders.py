"""Folders as torch.profiler writes them for a user's own job (tests/integration/tutorial_job.py,
real torchrun processes): several traces per rank, one per profiling cycle, a last cycle cut
short as the loop ends, one folder per rank. Each is read as one job, its ranks' steps numbered
as recorded, the time between cycles in no total."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.run_cli import traceview
from traceview import find_runs

pytest.importorskip("torch")
JOB = Path(__file__).with_name("tutorial_job.py")
# schedule(wait=1, warmup=1, active=4): a cycle of 6 steps, the last 4 recorded.
CYCLE_STEPS = [[2, 3, 4, 5], [8, 9, 10, 11], [14, 15, 16, 17]]
SUMMED = ("compute_us", "comm_us", "overlap_us", "exposed_comm_us", "idle_us", "window_us")


def run_job(out: Path, repeat: int, iterations: int, *layout: str) -> Path:
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc_per_node=2", str(JOB), str(out), str(repeat), str(iterations),
                *layout]  # fmt: skip
    for _ in range(2):  # a launch on a loaded machine can lose a Gloo connection: once more
        proc = subprocess.run(torchrun, capture_output=True, text=True, timeout=240)
        if proc.returncode == 0:
            return out
        shutil.rmtree(out, ignore_errors=True)
    raise AssertionError(proc.stderr[-3000:])


@pytest.fixture(scope="module")
def cycles(tmp_path_factory) -> Path:
    """repeat=0 over 20 steps: three whole cycles, and a fourth the loop's end cuts short,
    holding only the step the last prof.step() opened."""
    return run_job(tmp_path_factory.mktemp("tutorial") / "traces", 0, 20)


def analyzed(path: Path, *more: str) -> dict:
    result = traceview("analyze", path, "--format", "json", *more)
    assert result.code == 0, result.err
    return json.loads(result.out)


@pytest.mark.torchrun
def test_every_cycle_of_a_rank_is_one_rank(cycles):
    traces = sorted(cycles.iterdir())
    assert len(traces) == 8  # 2 ranks × 4 cycles
    doc = analyzed(cycles)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    for rank in doc["ranks"]:
        assert [s["step"] for s in rank["steps"]] == [s for c in CYCLE_STEPS for s in c]
        notes = [n["message"] for n in rank["notes"]]
        assert any(m.startswith("profiled in 3 cycles") for m in notes), notes
        stub = [m for m in notes if "set aside" in m]
        assert len(stub) == 1 and "holds no complete step (step 20 without work" in stub[0]
        # The totals are the cycles' totals summed, each cycle read alone: the time between
        # cycles is in none of them.
        worker = Path(rank["trace"]).name.split(".")[0]  # <host>_<pid>
        mine = [t for t in traces if t.name.split(".")[0] == worker]
        alone = [analyzed(t)["ranks"][0] for t in mine]
        whole = [a for a in alone if a["steps"] and len(a["steps"]) == 4]
        assert len(whole) == 3
        for key in SUMMED:
            assert rank["total"][key] == pytest.approx(sum(a["total"][key] for a in whole))
        t = rank["total"]
        assert t["compute_us"] + t["exposed_comm_us"] + t["idle_us"] == pytest.approx(
            t["window_us"]
        )


@pytest.mark.torchrun
def test_steps_choose_a_cycle_and_a_missing_step_is_refused(cycles):
    doc = analyzed(cycles, "--steps", "8-11")
    assert [s["step"] for s in doc["ranks"][0]["steps"]] == [8, 9, 10, 11]
    missing = traceview("analyze", cycles, "--steps", "6")
    assert missing.code == 2 and missing.out == ""
    assert missing.err == (
        f"traceview: error: no step 6 in {cycles} (steps 2–5, 8–11, 14–17): name steps it has, "
        "e.g. --steps 2\n"
    )


@pytest.mark.torchrun
def test_a_store_refuses_cycles_saying_what_reads_them(cycles, tmp_path):
    result = traceview("ingest", cycles, "--store", tmp_path / "store")
    assert result.code == 2
    assert "rank 0 was profiled in 4 cycles" in result.err
    assert "analyze the folder itself" in result.err


@pytest.mark.torchrun
def test_one_folder_per_rank_is_one_job(tmp_path):
    folder = run_job(tmp_path / "traces", 2, 14, "per-rank")
    assert sorted(p.name for p in folder.iterdir()) == ["rank0", "rank1"]
    # Listed as one run (the dashboard's run list), from the traces' heads.
    (listed,) = find_runs([folder])
    assert listed.folder == folder and [p.name for p in listed.parts] == ["rank0", "rank1"]
    (job,) = analyzed(folder)["jobs"]
    assert job["ranks"] == 2
    doc = analyzed(folder)
    for rank in doc["ranks"]:
        assert [s["step"] for s in rank["steps"]] == CYCLE_STEPS[0] + CYCLE_STEPS[1]
        assert any("gathered from 2 folders" in n["message"] for n in rank["notes"])
