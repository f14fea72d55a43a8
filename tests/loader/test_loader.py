"""The front door: paths -> runs -> ranks, shared by the CLI, the dashboard and Python users."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import traceview
from tests import tracebuild as tb
from tests.cli.run_cli import traceview as cli
from tests.documents.test_schemas import validate

ROOT = Path(__file__).parents[2]
SAMPLES = ROOT / "sample_traces"
SWEEP = SAMPLES / "cpu_sweep"


def test_a_sweep_is_found_through_its_index_and_a_folder_of_folders_as_is(tmp_path):
    names = {Path(r.name).name for r in traceview.find_runs([SAMPLES])}
    assert len(names) == 12 and {"ddp-dp1", "zero3-dp4"} <= names
    assert all(len(r.files) == int(Path(r.name).name[-1]) for r in traceview.find_runs([SWEEP]))
    # The same runs in a plain folder of folders, one of them a level deeper, no index.
    plain = tmp_path / "plain"
    shutil.copytree(SWEEP / "ddp-dp2", plain / "a")
    shutil.copytree(SWEEP / "zero1-dp1", plain / "deeper" / "b")
    assert [Path(r.name).name for r in traceview.find_runs([plain])] == ["a", "b"]


def test_runs_are_listed_from_their_records_alone():
    summaries = {
        s.source.folder.name: s for s in map(traceview.summarize, traceview.find_runs([SWEEP]))
    }
    zero3 = summaries["zero3-dp4"]
    assert (zero3.strategy, zero3.dp, zero3.traces, zero3.preset) == ("zero3", 4, 4, "tiny")
    assert zero3.samples_per_s > 0 and zero3.problem is None


@pytest.mark.cli
def test_load_gives_the_totals_the_cli_prints():
    job = traceview.load(SWEEP / "ddp-dp2")
    printed = json.loads(cli("analyze", SWEEP / "ddp-dp2", "--format", "json").out)
    assert len(job.ranks) == len(printed["ranks"]) == 2
    for mine, theirs in zip(job.ranks, printed["ranks"], strict=True):
        assert mine.rank == theirs["rank"]
        for metric in ("window", "compute", "comm", "overlap", "exposed_comm", "idle"):
            assert mine.total.ns(metric) / 1000 == pytest.approx(theirs["total"][f"{metric}_us"])
        assert [s.step for s in mine.steps] == [
            s["step"] for s in theirs["steps"] if not s["before_first_step"]
        ]


def test_a_job_brings_its_calls_intervals_and_run_record():
    job = traceview.load(SWEEP / "zero2-dp2", keep_intervals=True)
    assert job.run is not None and job.run.strategy == "zero2"
    assert job.calls.columns == list(traceview.JOB_CALLS_SCHEMA)
    assert job.calls.height > 0 and set(job.calls["rank"]) == {0, 1}
    assert set(job.intervals["rank"]) == {0, 1}
    assert dict(job.intervals.schema) == dict(traceview.INTERVALS_SCHEMA)
    assert job.cross_rank is not None and job.cross_rank.aligned


def test_intervals_left_out_of_a_load_are_read_when_first_asked_for(tmp_path):
    path = tb.write(tmp_path / "rank0.json", tb.document(tb.gpu_example()))
    job = traceview.load(path)
    assert job.ranks[0].intervals is None
    kept = traceview.load(path, keep_intervals=True).intervals
    assert job.intervals.equals(kept) and kept.height > 0
    path.unlink()  # read once: not again
    assert job.intervals.equals(kept)


@pytest.mark.cli
def test_intervals_of_a_stream_cannot_be_read_again():
    data = json.dumps(tb.document(tb.gpu_example())).encode()
    script = (
        "import traceview\n"
        "job = traceview.load('-')\n"
        "try:\n    job.intervals\nexcept traceview.TraceviewError as e:\n    print(e.message)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=data, capture_output=True, timeout=120, check=True
    )
    assert done.stdout.decode().strip() == "-: a stream cannot be read again for its intervals"


def test_many_runs_are_loaded_together_and_one_run_is_asked_for_by_name():
    runs = traceview.load_runs([SWEEP])
    assert len(runs.jobs) == 12 and not runs.failures
    assert {(r.strategy, r.dp) for r in runs.scaling()} == {
        (s, n) for s in ("ddp", "zero1", "zero2", "zero3") for n in (1, 2, 4)
    }
    with pytest.raises(traceview.TraceviewError, match="holds 12 runs; load them with"):
        traceview.load(SWEEP)


@pytest.mark.cli
def test_the_run_record_is_read_only_when_a_figure_needs_it(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SWEEP / "ddp-dp1", run)
    (run / "run.json").write_text("{broken")
    assert cli("analyze", run).code == 0  # per-rank figures need no run record
    job = traceview.load(run)
    assert job.ranks[0].total is not None
    with pytest.raises(traceview.TraceviewError, match="not a run record"):
        _ = job.run
    assert cli("compare", run).code == 2


@pytest.mark.parametrize(
    "args",
    [("compare", SAMPLES), ("analyze", SWEEP), ("collectives", SAMPLES), ("ranks", SWEEP)],
)
@pytest.mark.cli
def test_every_command_takes_a_folder_of_runs(args):
    result = cli(*args, "--format", "json")
    assert result.code == 0, result.err
    doc = validate(args[0], result.out)  # against docs/schema
    found = doc.get("runs") or doc.get("jobs")
    assert len(found) == 12  # 4 strategies × DP 1, 2, 4
    if args[0] == "analyze":
        assert len(doc["ranks"]) == 28  # 4 strategies × (1 + 2 + 4) traces


@pytest.mark.cli
def test_a_report_of_every_sample_run(tmp_path):
    out = tmp_path / "report.html"
    result = cli("report", SAMPLES, "-o", out)
    assert result.code == 0, result.err
    assert out.stat().st_size > 10_000 and "zero3" in out.read_text()


@pytest.mark.cli
def test_a_script_without_a_main_guard_runs_once(tmp_path):
    # Worker processes must not run the user's script again (spawn imports the main module).
    script = tmp_path / "notebook_cell.py"
    script.write_text(
        "import traceview\n"
        "print('started', flush=True)\n"
        f"job = traceview.load({str(SWEEP / 'ddp-dp4')!r}, jobs=2)\n"
        "print(len(job.ranks), 'ranks')\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "started\n4 ranks\n"


@pytest.mark.cli
def test_the_readme_python_example_runs(tmp_path):
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Python API") :]
    start = section.index("```python\n") + len("```python\n")
    code = section[start : section.index("\n```", start)]
    assert "traceview.load(" in code
    script = tmp_path / "example.py"
    script.write_text(code)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert "zero3 4" in done.stdout
