"""Pipes, special files, output faults and internal errors: one line, a documented exit code,
nothing lost."""

from __future__ import annotations

import gzip
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import tracebuild as tb
from tests.cli.run_cli import traceview
from traceview import cli
from traceview.cli.output import replacing
from traceview.parse.stream import A_TRACE

GOOD = [tb.step(1, 0, 100), tb.launch(1, 5), tb.kernel("k", 10, 20, 1)]


def run(*args: str | Path, stdin: bytes | None = None, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    return subprocess.run(
        [sys.executable, "-m", "traceview", *map(str, args)], input=stdin, timeout=120, **kw
    )


@pytest.mark.cli
@pytest.mark.parametrize("packed", [False, True])
def test_standard_input_plain_or_gzip(packed):
    data = json.dumps(tb.document(GOOD)).encode()
    result = run("analyze", "-", "--format", "json", stdin=gzip.compress(data) if packed else data)
    assert result.returncode == 0, result.stderr
    (rank,) = json.loads(result.stdout)["ranks"]
    assert rank["trace"] == "-" and rank["total"]["compute_us"] == 20.0


@pytest.mark.cli
def test_zeros_that_end_a_piped_trace_are_said():
    # Read as a stream (never seeked), a trace cut short and zero-filled, as a crash leaves one:
    # recovered as a cut, the zeros ignored and said, exit 1.
    events = [tb.cpu_op(f"aten::op{i}", i * 10, 5) for i in range(400)]
    data = json.dumps(tb.document(events)).encode()
    data = data[: data.index(b'{"ph"', len(data) // 2) + 30]
    result = run("analyze", "-", stdin=data + bytes(5000))
    assert result.returncode == 1, result.stderr
    warnings = result.stderr.decode().splitlines()
    assert any(f"trace is cut short at byte {len(data):,}, inside an event" in w for w in warnings)
    assert any("5,000 zero bytes end the trace: ignored (a crash" in w for w in warnings)


@pytest.mark.cli
def test_dev_stdin_and_an_empty_pipe():
    data = json.dumps(tb.document(GOOD)).encode()
    assert run("analyze", "/dev/stdin", stdin=data).returncode == 0
    empty = run("analyze", "-", stdin=b"")
    assert empty.returncode == 2
    assert empty.stderr.decode().strip() == (
        f"traceview: error: -: empty file: nothing of a trace was written to it; {A_TRACE}"
    )


@pytest.mark.cli
def test_a_named_pipe_is_read_and_a_silent_one_is_said(tmp_path):
    # The trace is written only once traceview has said it is waiting: no race with its timer.
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    command = [sys.executable, "-m", "traceview", "analyze", str(fifo)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stderr is not None
        said = proc.stderr.readline().decode()
        assert said.startswith("traceview: waiting: nothing has arrived yet from"), said
        with fifo.open("wb") as f:
            f.write(json.dumps(tb.document(GOOD)).encode())
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0
    assert "rank 0 of 2" in out.decode()


@pytest.mark.cli
def test_a_full_or_closed_stdout_is_one_line(tmp_path):
    path = tb.write(tmp_path / "t.json", tb.document(GOOD))
    with open("/dev/full", "wb") as full:
        result = run("analyze", path, stdout=full, stderr=subprocess.PIPE)
    assert result.returncode == 2
    assert result.stderr.decode().strip() == (
        "traceview: error: cannot write to standard output (No space left on device)"
    )
    closed = subprocess.run(
        f"{sys.executable} -m traceview analyze {path} >&-", shell=True, capture_output=True
    )
    assert closed.returncode == 2
    assert closed.stderr.decode().strip().startswith("traceview: error: standard output is closed")


@pytest.mark.cli
def test_output_naming_an_input_is_refused_before_any_work(tmp_path):
    path = tb.write(tmp_path / "rank0.json", tb.document(GOOD))
    before = path.read_bytes()
    for target in (path, tmp_path / "run.json"):
        if target.name == "run.json":
            target.write_text("{}")
        result = traceview("analyze", tmp_path, "-o", target)
        assert result.code == 2 and "--output names one of the inputs" in result.err
    assert path.read_bytes() == before


@pytest.mark.cli
def test_output_onto_a_sweep_index_or_into_a_store_is_refused(tmp_path):
    import shutil

    sweep = tmp_path / "sweep"
    shutil.copytree(Path(__file__).parents[2] / "sample_traces" / "cpu_sweep", sweep)
    store = tmp_path / "S"
    assert traceview("ingest", sweep / "ddp-dp2", "--store", store).code == 0
    index = (sweep / "index.json").read_bytes()
    stored = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    for read, target in [
        (sweep, sweep / "index.json"),
        (sweep / "ddp-dp2", sweep / "index.json"),  # a run of the sweep: its index too
        (store, store / "store.json"),
        (store, store / "job=ddp-dp2" / "job.json"),
        (store / "job=ddp-dp2", store / "report.json"),  # anywhere in a store read
    ]:
        result = traceview("compare", read, "-o", target)
        assert result.code == 2, (read, target, result.err)
        assert "--output" in result.err and result.err.count("\n") == 1
    assert (sweep / "index.json").read_bytes() == index
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == stored
    assert traceview("compare", sweep).code == 0 and traceview("compare", store).code == 0


@pytest.mark.cli
def test_output_keeps_the_mode_and_follows_a_symlink(tmp_path):
    path = tb.write(tmp_path / "t.json", tb.document(GOOD))
    out = tmp_path / "report.csv"
    out.write_text("old")
    out.chmod(0o600)
    link = tmp_path / "latest.csv"
    link.symlink_to(out)
    assert traceview("analyze", path, "--format", "csv", "-o", link).code == 0
    assert link.is_symlink() and out.read_text().startswith("trace,rank")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_sigterm_while_writing_leaves_no_temporary_file(tmp_path):
    out = tmp_path / "out.json"
    out.write_text("previous")
    with pytest.raises(KeyboardInterrupt), cli.interrupted_by_sigterm(), replacing(out) as f:
        f.write(b"half of a report")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the signal arrives first
    assert out.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_an_internal_error_is_one_line_with_its_own_exit_code(tmp_path, monkeypatch, capsys):
    path = tb.write(tmp_path / "t.json", tb.document(GOOD))

    def broken(*args, **kwargs):
        raise RuntimeError("something impossible")

    monkeypatch.setattr("traceview.loader.parallel.build_timelines", broken)
    assert cli.main(["analyze", str(path)]) == 3
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"traceview: error: {path}: internal error: RuntimeError: something impossible "
        "(a bug in traceview; --debug shows where)"
    ]
    assert cli.main(["--debug", "analyze", str(path)]) == 3
    assert "Traceback (most recent call last)" in capsys.readouterr().err
    monkeypatch.setattr("traceview.cli.commands.analyze.run", broken)
    assert cli.main(["analyze", str(path)]) == 3
    assert capsys.readouterr().err.startswith("traceview: internal error: RuntimeError")


@pytest.mark.cli
def test_a_huge_step_range_is_not_materialised(tmp_path):
    path = tb.write(tmp_path / "t.json", tb.document(GOOD))
    result = traceview("analyze", path, "--steps", "0-100000000000000000000000", "--format", "json")
    assert result.code == 0
    (rank,) = json.loads(result.out)["ranks"]
    assert [s["step"] for s in rank["steps"]] == [1]


@pytest.mark.cli
def test_a_path_with_a_newline_is_still_one_line(tmp_path):
    result = traceview("analyze", tmp_path / "two\nlines.json")
    assert result.code == 2
    assert result.err.count("\n") == 1 and "two\\nlines.json" in result.err


@pytest.mark.parametrize(
    "pattern, reason",
    [
        ("(?=ahead)", "look-around, including look-ahead and look-behind, is not supported"),
        ("(unclosed", "unclosed group"),
        ("a{99999999}", "Compiled regex exceeds size limit of 10485760 bytes"),
    ],
)
@pytest.mark.cli
def test_an_invalid_pattern_names_the_regex_error(pattern, reason):
    result = traceview("analyze", "x.json", "--comm-pattern", pattern)
    assert result.code == 2 and result.err.count("\n") == 1
    assert f"invalid regular expression {pattern!r}: {reason} (see" in result.err


@pytest.mark.cli
def test_max_event_mb_bounds_one_event(tmp_path):
    # Longer than two of the 4 MB reads: a stretch without a boundary the reader would hold.
    huge = tb.cpu_op("x" * (9 << 20), 1, 1)
    path = tb.write(tmp_path / "t.json", tb.document([*GOOD, huge]))
    refused = traceview("analyze", path, "--max-event-mb", "1")
    assert refused.code == 2 and "raise it with --max-event-mb" in refused.err
    assert traceview("analyze", path, "--max-event-mb", "16").code == 0


@pytest.mark.cli
def test_dashboard_port_out_of_range_or_in_use(tmp_path):
    bad = traceview("dashboard", tmp_path, "--port", "99999999")
    assert bad.code == 2 and "not a port number (1 to 65535): 99999999" in bad.err
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        taken = traceview("dashboard", tmp_path, "--port", port)
    assert taken.code == 2 and taken.err.count("\n") == 1
    assert f"cannot serve on 127.0.0.1:{port} (Address already in use)" in taken.err


@pytest.mark.cli
def test_process_substitution(tmp_path):
    path = tb.write(tmp_path / "t.json.gz", tb.document(GOOD))
    done = subprocess.run(
        ["bash", "-c", f'{sys.executable} -m traceview analyze <(cat "{path}") --format csv'],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith("/dev/fd/") and done.stderr == ""
