"""Every refusal a user's own traces can meet says, in its one line, what was found and what
helps; and docs/errors.md lists it as printed."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import tracebuild as tb
from tests.cli.run_cli import traceview

ROOT = Path(__file__).parents[2]
ERRORS = (ROOT / "docs" / "errors.md").read_text()
DDP1 = ROOT / "sample_traces" / "cpu_sweep" / "ddp-dp1"


def _file(text: str) -> Callable[[Path], Path]:
    def made(tmp: Path) -> Path:
        (tmp / "t.json").write_text(text)
        return tmp / "t.json"

    return made


def _two_worlds(tmp: Path) -> Path:
    for rank, world in ((0, 2), (1, 4)):
        doc = tb.document(tb.gpu_example(group=world), rank=rank, world=world)
        tb.write(tmp / f"rank{rank}.json", doc)
    return tmp


def _two_runs(tmp: Path) -> Path:
    for name in ("first", "second"):
        shutil.copy(DDP1 / "rank0.pt.trace.json.gz", tmp / f"{name}.pt.trace.json.gz")
    return tmp


def _empty_folder(tmp: Path) -> Path:
    (tmp / "runs").mkdir()
    return tmp / "runs"


# (what the user gave, the cause said, what helps said): each as the one line prints them.
REFUSALS = {
    "an empty file": (_file(""), "empty file: nothing of a trace was written to it",
                      "give a trace torch.profiler wrote (export_chrome_trace or "
                      "tensorboard_trace_handler)"),
    "a log": (_file("step 1 loss 2.3\n"), "not JSON (starts with", "give a trace torch.profiler wrote"),
    "broken JSON": (_file('{"traceEvent": [1,'), "not valid JSON, and no traceEvents array found",
                    "give a trace torch.profiler wrote"),
    "other JSON": (_file('{"lr": 0.1}'), "JSON without a traceEvents array: not a profiler trace",
                   "give a trace torch.profiler wrote"),
    "another tool's trace": (
        _file('[{"ph": "X", "name": "x", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]'),
        "not a PyTorch profiler trace", "Record with torch.profiler.profile"),
    "a folder of no traces": (_empty_folder, "no trace files (*.json, *.json.gz) here or below",
                              "name the folder torch.profiler wrote into"),
    "two worlds in one folder": (_two_worlds, "mixes traces of different jobs",
                                 "move each job's traces into a folder of its own"),
    "one rank twice": (_two_runs, "rank 0 is claimed by both", "into a folder of its own"),
}  # fmt: skip


@pytest.mark.cli
@pytest.mark.parametrize("case", list(REFUSALS))
def test_each_refusal_says_its_cause_and_what_helps(tmp_path, case):
    make, cause, helps = REFUSALS[case]
    done = traceview("analyze", make(tmp_path))
    assert done.code == 2, (done.out, done.err)
    (line,) = done.err.strip().splitlines()
    assert line.startswith("traceview: error: ") and cause in line and helps in line, line
    assert line.index(cause) < line.index(helps)  # the cause, then what helps
    documented = cause.replace("rank 0 ", "rank R ")  # the table names its numbers by letters
    assert f"`PATH: {documented}" in ERRORS or f"`DIR: {documented}" in ERRORS, cause


@pytest.mark.cli
def test_a_step_the_job_lacks_names_those_it_has():
    done = traceview("analyze", DDP1, "--steps", "9")
    assert done.code == 2
    assert done.err.strip() == (
        f"traceview: error: no step 9 in {DDP1} (steps 2–3): name steps it has, e.g. --steps 2"
    )
    assert "`no step S in JOB (steps 2–5, 8–11): name steps it has, e.g. --steps 2`" in ERRORS


@pytest.mark.cli
def test_diff_with_one_run_unreadable_says_why_that_run(tmp_path):
    # Not a usage message ("these paths hold 1"): the unreadable run's own error.
    broken = _file("step 1 loss 2.3\n")(tmp_path)
    done = traceview("diff", DDP1, broken)
    assert done.code == 2
    (line,) = done.err.strip().splitlines()
    assert line.startswith(f"traceview: error: {broken}: not JSON (starts with"), line
