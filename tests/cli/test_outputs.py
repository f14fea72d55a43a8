"""The documented output formats of `traceview analyze` (docs/output.md)."""

import csv
import io
import json
import re
from pathlib import Path

import pytest

from tests import tracebuild as tb
from tests.cli.run_cli import traceview
from tests.documents.test_schemas import validate
from traceview.cli import main


@pytest.fixture
def gpu_trace(tmp_path):
    return tb.write(tmp_path / "gpu.json.gz", tb.document(tb.gpu_example()))


def test_json_document(gpu_trace, capsys):
    assert main(["analyze", "--format", "json", str(gpu_trace)]) == 0
    doc = validate("analyze", capsys.readouterr().out)  # against docs/schema
    assert doc["errors"] == []
    (rank,) = doc["ranks"]
    assert (rank["rank"], rank["world_size"]) == (0, 2)
    assert rank["total"]["compute_us"] == 140.0 and rank["total"]["idle_us"] == 5.0
    before, s1, s2 = rank["steps"]
    assert (before["step"], before["before_first_step"], before["kernels"]) == (None, True, 1)
    assert (before["memcpy"], before["memset"]) == (0, 0)
    assert before["window_us"] == 35.0 and before["compute_us"] == 35.0
    assert (s1["step"], s1["before_first_step"], s1["kernels"]) == (1, False, None)
    assert s1["overlap_pct"] == pytest.approx(600 / 7)
    assert s2["overlap_pct"] is None  # no communication: undefined, not 0
    assert rank["collectives"] == [
        {"collective": "all_reduce", "count": 1, "total_us": 70.0, "bytes": 4000, "bytes_known": 1}
    ]


def test_csv_rows_per_step_and_total(gpu_trace, capsys):
    assert main(["analyze", "--format", "csv", str(gpu_trace)]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["step"] for r in rows] == ["before_first_step", "1", "2", "total"]
    assert rows[0]["window_us"] == "35.000"
    assert rows[1]["overlap_us"] == "60.000" and rows[2]["overlap_pct"] == ""
    assert rows[3]["window_us"] == "155.000"


def test_table_is_readable(gpu_trace, capsys):
    assert main(["analyze", str(gpu_trace)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("rank 0 of 2 · nccl · gpu · ")
    assert "overlap %" in out and "85.7" in out
    assert "before first step" in out
    assert "all_reduce: 1 call, 0.070 ms, 0.0 MB" in out


def test_step_filter_keeps_totals(gpu_trace, capsys):
    assert main(["analyze", "--format", "json", "--steps", "2", str(gpu_trace)]) == 0
    (rank,) = json.loads(capsys.readouterr().out)["ranks"]
    assert [s["step"] for s in rank["steps"]] == [2]
    assert rank["total"]["window_us"] == 155.0


@pytest.mark.cli
def test_output_file_and_parallel_folder(tmp_path):
    for r in range(3):
        tb.write(tmp_path / f"rank{r}.json", tb.document(tb.gpu_example(), rank=r, world=3))
    out = tmp_path / "out" / "report.json"
    out.parent.mkdir()
    result = traceview("analyze", tmp_path, "--format", "json", "--output", out, "--jobs", "2")
    assert result.code == 0 and result.out == ""
    doc = json.loads(out.read_text())
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 2]
    assert {r["total"]["overlap_us"] for r in doc["ranks"]} == {60.0}


@pytest.mark.cli
def test_progress_is_shown_when_asked(tmp_path):
    for r in range(2):
        tb.write(tmp_path / f"rank{r}.json", tb.document(tb.gpu_example(), rank=r))
    result = traceview("analyze", tmp_path, "--progress", "--format", "csv")
    assert result.code == 0
    # One line of counts, rewritten in place: not a line per trace (think of 1,000 ranks).
    assert "2 of 2 traces" in result.err and "rank0" not in result.err
    single = traceview("analyze", tmp_path / "rank0.json", "--progress")
    assert "reading trace:" in single.err
    quiet = traceview("analyze", tmp_path / "rank0.json")  # stderr is not a terminal here
    assert quiet.err == ""


@pytest.mark.cli
def test_output_to_a_special_file_writes_through_it(tmp_path):
    # Renaming a temporary file over /dev/null or a FIFO would replace the device itself.
    import os
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    tb.write(tmp_path / "t.json", tb.document(tb.gpu_example()))
    result = traceview("analyze", tmp_path / "t.json", "--format", "csv", "--output", fifo)
    reader.join(timeout=60)
    assert result.code == 0, result.err
    assert received and received[0].startswith("trace,rank,world_size,step")
    assert fifo.is_fifo()


@pytest.mark.cli
@pytest.mark.parametrize("command", ["analyze", "collectives", "ranks", "compare"])
def test_csv_numbers_carry_no_binary_noise(command):
    sweep = Path(__file__).parents[2] / "sample_traces" / "cpu_sweep"
    result = traceview(command, sweep, "--format", "csv")
    assert result.code == 0, result.err
    assert len(result.out.splitlines()) > 2
    assert re.findall(r"\d\.\d{7,}", result.out) == []  # e.g. 121.37100000000001


@pytest.mark.cli
def test_calls_before_the_first_step_are_named_so_never_step_none():
    # A rank whose profiling began mid-step: its first calls were launched before the window.
    trace = (
        Path(__file__).parents[1]
        / "fixtures" / "traces" / "nccl_w8_rank3_step1010_started_mid_run.json.gz"
    )  # fmt: skip
    result = traceview("collectives", trace)
    assert result.code == 0, result.err
    assert "None" not in result.out
    assert re.search(r"^\s+3\s+before first step\s+0\s+send_recv", result.out, re.M)
    assert "rank 3 before the first step: most exposed: send_recv" in result.out
