"""Bad input: a one-line message, a non-zero exit, never a traceback."""

import gzip
import json
import os

import pytest

from tests import tracebuild as tb
from tests.cli.run_cli import Result, traceview
from traceview.parse.stream import A_TRACE

GOOD = [tb.step(1, 0, 100), tb.launch(1, 5), tb.kernel("k", 10, 20, 1)]


def one_line_error(result: Result, code: int, *fragments: str) -> None:
    assert result.code == code, result
    assert "Traceback" not in result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("traceview: error: ")
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.cli
def test_empty_file(tmp_path):
    (tmp_path / "t.json").write_bytes(b"")
    one_line_error(traceview("analyze", tmp_path / "t.json"), 2, "empty file")


@pytest.mark.cli
def test_not_json(tmp_path):
    (tmp_path / "t.json").write_text("hello, world\n")
    one_line_error(traceview("analyze", tmp_path / "t.json"), 2, "not JSON")


@pytest.mark.cli
def test_json_that_is_not_a_trace(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps({"loss": [1.0, 0.5]}))
    one_line_error(traceview("analyze", tmp_path / "t.json"), 2, "not a profiler trace")


@pytest.mark.cli
def test_broken_json_inside_the_events(tmp_path):
    text = json.dumps(tb.document(GOOD * 3)).replace('"dur": 20', '"dur": 2!0', 1)
    (tmp_path / "t.json").write_text(text)
    result = traceview("analyze", tmp_path / "t.json")
    assert result.code != 0 and "Traceback" not in result.err


@pytest.mark.cli
def test_corrupt_gzip(tmp_path):
    packed = bytearray(gzip.compress(json.dumps(tb.document(GOOD * 50)).encode()))
    packed[40:60] = b"\xff" * 20
    (tmp_path / "t.json.gz").write_bytes(bytes(packed))
    one_line_error(traceview("analyze", tmp_path / "t.json.gz"), 2, "corrupt gzip")


@pytest.mark.cli
def test_truncated_file_recovers_and_says_so(tmp_path):
    events = [tb.step(1, 0, 1000)] + [
        x
        for i in range(50)
        for x in (tb.launch(i + 1, 10 * i + 1), tb.kernel("k", 10 * i + 2, 5, i + 1))
    ]
    data = json.dumps(tb.document(events), indent=1).encode()
    (tmp_path / "t.json").write_bytes(data[: len(data) * 2 // 3])
    result = traceview("analyze", "--format", "json", tmp_path / "t.json")
    assert result.code == 1
    (line,) = result.err.strip().splitlines()
    assert line.startswith("traceview: warning: ") and "cut short" in line
    (rank,) = json.loads(result.out)["ranks"]
    assert rank["truncated"] is True
    assert any("cut short" in n["message"] and n["severity"] == "lossy" for n in rank["notes"])
    assert rank["total"]["compute_us"] > 0


@pytest.mark.cli
def test_events_without_ts_or_dur(tmp_path):
    bad = [{**tb.kernel("k", 0, 1, 7), "ts": None}, {"ph": "X", "name": "x", "ts": 3}]
    tb.write(tmp_path / "t.json", tb.document(GOOD + bad))
    result = traceview("analyze", tmp_path / "t.json")
    assert result.code == 1
    assert "2 complete events without a readable ts or dur" in result.err
    assert "Traceback" not in result.err


@pytest.mark.cli
def test_negative_durations(tmp_path):
    tb.write(tmp_path / "t.json", tb.document([*GOOD, tb.kernel("k", 50, -5, 9)]))
    result = traceview("analyze", tmp_path / "t.json")
    assert result.code == 1
    assert "1 event with negative durations was skipped" in result.err


@pytest.mark.cli
@pytest.mark.parametrize("field", ["pid", "tid"])
def test_events_without_a_process_or_thread_are_skipped_and_said(tmp_path, field):
    # The GEMM at [50,80) loses its pid: it lies on no stream, so it is skipped, said, and the
    # numbers are those of the trace without it (not a lane of its own, nor merged into one).
    events = tb.gpu_example(group=2)
    gemm = next(i for i, e in enumerate(events) if e["name"] == "volta_sgemm_128x64_nn")
    placeless = [dict(e) for e in events]
    del placeless[gemm][field]
    tb.write(tmp_path / "placeless.json", tb.document(placeless))
    tb.write(tmp_path / "without.json", tb.document(events[:gemm] + events[gemm + 1 :]))
    result = traceview("analyze", "--format", "json", tmp_path / "placeless.json")
    assert result.code == 1
    (line,) = result.err.strip().splitlines()
    assert "1 event without a process or thread id (pid, tid) was skipped" in line
    (rank,) = json.loads(result.out)["ranks"]
    (expected,) = json.loads(
        traceview("analyze", "--format", "json", tmp_path / "without.json").out
    )["ranks"]
    assert rank["steps"] == expected["steps"] and rank["total"] == expected["total"]


@pytest.mark.cli
@pytest.mark.parametrize("field", ["ts", "dur"])
def test_an_event_far_outside_the_trace_is_skipped_and_said(tmp_path, field):
    # 31 years before the others (or lasting 31 years): it would stretch the trace's window
    # to make it 99.99 % idle.
    events = tb.gpu_example(group=2)
    corrupt = [*events, {**tb.cpu_op("aten::mm", 10, 5), field: -1e15 if field == "ts" else 1e15}]
    tb.write(tmp_path / "far.json", tb.document(corrupt))
    tb.write(tmp_path / "without.json", tb.document(events))
    result = traceview("analyze", "--format", "json", tmp_path / "far.json")
    assert result.code == 1
    assert "1 event lies more than a day from the trace's other events" in result.err
    (rank,) = json.loads(result.out)["ranks"]
    (expected,) = json.loads(
        traceview("analyze", "--format", "json", tmp_path / "without.json").out
    )["ranks"]
    assert rank["steps"] == expected["steps"] and rank["total"] == expected["total"]


@pytest.mark.cli
def test_two_files_claiming_the_same_rank(tmp_path):
    tb.write(tmp_path / "a.json", tb.document(GOOD, rank=0))
    tb.write(tmp_path / "b.json", tb.document(GOOD, rank=0))
    one_line_error(traceview("analyze", tmp_path), 2, "rank 0 is claimed by both a.json and b.json")


@pytest.mark.cli
def test_folder_mixing_world_sizes(tmp_path):
    tb.write(tmp_path / "a.json", tb.document(GOOD, rank=0, world=2))
    tb.write(tmp_path / "b.json", tb.document(GOOD, rank=1, world=8))
    one_line_error(traceview("analyze", tmp_path), 2, "different jobs", "world_size")


@pytest.mark.cli
def test_folder_mixing_strategies(tmp_path):
    def run(strategy: str) -> dict:
        return {"traceview_run": {"strategy": strategy, "world_size": 2}}

    tb.write(tmp_path / "a.json", tb.document(GOOD, rank=0, **run("zero2")))
    tb.write(tmp_path / "b.json", tb.document(GOOD, rank=1, **run("zero3")))
    one_line_error(traceview("analyze", tmp_path), 2, "different jobs", "strategy zero2")


@pytest.mark.cli
def test_folder_mixing_jobs_recorded_days_apart(tmp_path):
    day_ns = 86400 * 10**9
    tb.write(tmp_path / "a.json", tb.document(GOOD, rank=0, baseTimeNanoseconds=17 * 10**17))
    tb.write(
        tmp_path / "b.json", tb.document(GOOD, rank=1, baseTimeNanoseconds=17 * 10**17 + 3 * day_ns)
    )
    one_line_error(traceview("analyze", tmp_path), 2, "different jobs", "72.0 h")


@pytest.mark.cli
def test_missing_path(tmp_path):
    one_line_error(traceview("analyze", tmp_path / "nope.json"), 2, "no such file or folder")


@pytest.mark.cli
def test_folder_without_traces(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    one_line_error(traceview("analyze", tmp_path), 2, "no trace files")


@pytest.mark.cli
def test_broken_symlink(tmp_path):
    (tmp_path / "t.json").symlink_to(tmp_path / "gone.json")
    one_line_error(traceview("analyze", tmp_path / "t.json"), 2, "no such file")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path):
    path = tb.write(tmp_path / "t.json", tb.document(GOOD))
    path.chmod(0)
    one_line_error(traceview("analyze", path), 2, "permission denied")


@pytest.mark.cli
def test_unreadable_entry_in_a_folder_fails_that_file_only(tmp_path):
    tb.write(tmp_path / "rank0.json", tb.document(GOOD, rank=0, world=4))
    (tmp_path / "rank1.json").mkdir()  # a folder where a trace should be
    tb.write(tmp_path / "rank2.json", tb.document(GOOD, rank=2, world=4))
    (tmp_path / "rank3.json").write_text("")
    result = traceview("analyze", "--format", "json", tmp_path)
    assert result.code == 2
    assert [r["rank"] for r in json.loads(result.out)["ranks"]] == [0, 2]
    assert result.err.strip().splitlines() == [
        f"traceview: error: {tmp_path / 'rank3.json'}: empty file: nothing of a trace was "
        f"written to it; {A_TRACE}"
    ]


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["analyze"], "required: PATH"),
        (["analyze", "x.json", "--format", "xml"], "invalid choice: 'xml'"),
        (["analyze", "x.json", "--steps", "a-b"], "not a step list"),
        (["analyze", "x.json", "--comm-pattern", "(unclosed"], "invalid regular expression"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
@pytest.mark.cli
def test_bad_arguments(args, fragment):
    one_line_error(traceview(*args), 2, fragment)


@pytest.mark.cli
def test_output_is_replaced_whole_or_not_at_all(tmp_path):
    out = tmp_path / "report.json"
    out.write_text("previous report\n")
    (tmp_path / "bad.json").write_text("not json")
    result = traceview("analyze", tmp_path / "bad.json", "--output", out)
    assert result.code == 2
    assert out.read_text() == "previous report\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.cli
def test_other_json_in_a_folder_is_skipped_and_said(tmp_path):
    tb.write(tmp_path / "rank0.json", tb.document(GOOD, rank=0))
    (tmp_path / "config.json").write_text(json.dumps({"lr": 0.1}))
    result = traceview("analyze", "--format", "json", tmp_path)
    assert result.code == 0
    assert [r["rank"] for r in json.loads(result.out)["ranks"]] == [0]
    assert (
        result.err.strip()
        == f"traceview: skipped: {tmp_path / 'config.json'}: not a profiler trace"
    )


def _record(**changed: object) -> dict:
    """A minimal run record of one rank, with `changed` keys replaced."""
    return {
        "record_version": 1,
        "strategy": "ddp",
        "world_size": 1,
        "num_params": 10,
        "config": {},
        "global_batch": {"micro_batch": 1, "dp": 1, "grad_accum": 1, "samples": 1, "tokens": 1},
        "ranks": [],
        **changed,
    }


@pytest.mark.cli
def test_a_run_record_with_an_impossible_world_is_refused(tmp_path):
    tb.write(tmp_path / "rank0.json", tb.document(GOOD, rank=0, world=1))
    (tmp_path / "run.json").write_text(json.dumps(_record(world_size=0)))
    one_line_error(traceview("compare", tmp_path), 2, "not a run record (world_size 0)")


@pytest.mark.cli
def test_a_run_record_from_a_newer_harness_is_refused_not_half_read(tmp_path):
    tb.write(tmp_path / "rank0.json", tb.document(GOOD, rank=0, world=1))
    record = _record(record_version=2)
    (tmp_path / "run.json").write_text(json.dumps(record))
    one_line_error(
        traceview("compare", tmp_path), 2, "record_version 2, newer than this traceview reads (1)"
    )
    del record["record_version"]
    (tmp_path / "run.json").write_text(json.dumps(record))
    one_line_error(traceview("compare", tmp_path), 2, "missing required field `record_version`")


@pytest.mark.cli
def test_a_sweep_index_pointing_outside_its_folder_is_not_followed(tmp_path):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (tmp_path / "elsewhere").mkdir()
    tb.write(tmp_path / "elsewhere" / "rank0.json", tb.document(GOOD))
    index = {"runs": [{"path": "../elsewhere", "status": "ok"}]}
    (sweep / "index.json").write_text(json.dumps(index))
    one_line_error(traceview("compare", sweep), 2, "lists a run outside its folder")


@pytest.mark.cli
def test_an_incomplete_run_with_some_traces_is_said_once(tmp_path):
    tb.write(tmp_path / "rank0.pt.trace.json.gz", tb.document(GOOD, rank=0, world=2))
    done = {"rank": 0, "state": "done", "steps_done": 7, "wrote": ["rank0.pt.trace.json.gz"]}
    silent = {"rank": 1, "state": "running", "steps_done": 3, "wrote": []}
    for account in (done, silent):
        (tmp_path / f"rank{account['rank']}.status.json").write_text(json.dumps(account))
    result = traceview("analyze", tmp_path, "--format", "json")
    assert result.code == 1
    expected = (
        "incomplete run (no run.json): rank 0 finished (wrote rank0.pt.trace.json.gz); "
        "rank 1 went silent after 3 steps (killed?)"
    )
    assert (
        result.err.strip()
        == f"traceview: warning: {tmp_path / 'rank0.pt.trace.json.gz'}: {expected}"
    )
    (rank,) = json.loads(result.out)["ranks"]
    assert {"severity": "lossy", "message": expected} in rank["notes"]
