"""Nothing lost in the store: writers at once, ranks missing from a job, damaged partitions,
a store that cannot be written, traces that lose input or are no traces, workers that die."""

from __future__ import annotations

import fcntl
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import procs
from tests.cli.run_cli import traceview, traceview_started
from tests.store.test_store import SWEEP, _json, _paths_out


def _ingest(*args: str | Path) -> subprocess.Popen[str]:
    return traceview_started("ingest", *args)


@pytest.mark.cli
def test_two_ingests_at_once_lose_no_partition(tmp_path):
    store = tmp_path / "S"
    both = [_ingest(SWEEP, "--store", store, "--jobs", "1") for _ in range(2)]
    for proc in both:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert "28 rank partitions written" in out or "unchanged" in out, out
    assert len(list(store.glob("job=*/rank=*/summary.json"))) == 28
    assert not [p for p in store.rglob("*") if ".old-" in p.name or p.name == ".incoming"]
    done = traceview("compare", store, "--format", "json")
    assert done.code == 0, done.err
    assert _paths_out(json.loads(done.out)) == _paths_out(_json("compare", SWEEP))


@pytest.mark.cli
def test_a_writer_waits_for_the_one_holding_the_store_and_says_so(tmp_path):
    store = tmp_path / "S"
    assert traceview("ingest", SWEEP / "ddp-dp1", "--store", store).code == 0
    with (store / ".writer.lock").open("r+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write(json.dumps({"pid": 4242, "host": "elsewhere", "since": time.time()}))
        held.flush()
        proc = _ingest(SWEEP / "ddp-dp2", "--store", store)
        time.sleep(8)  # long enough to parse both traces and reach the lock
        assert proc.poll() is None, proc.communicate()
        assert not (store / "job=ddp-dp2").exists()  # nothing in place while it waits
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "waiting: " in err and "pid 4242 on elsewhere" in err, err
    assert "2 rank partitions written" in out


def _stored(tmp_path: Path, run: str = "ddp-dp2") -> Path:
    store = tmp_path / "S"
    done = traceview("ingest", SWEEP / run, "--store", store)
    assert done.code == 0, done.err
    return store


@pytest.mark.cli
@pytest.mark.parametrize("damage", ["folder", "summary"])
def test_a_rank_missing_from_a_stored_job_is_said_in_every_output(tmp_path, damage):
    store = _stored(tmp_path)
    gone = store / "job=ddp-dp2" / "rank=1"
    if damage == "folder":
        shutil.rmtree(gone)
    else:
        (gone / "summary.json").unlink()
    table = traceview("analyze", store)
    assert table.code == 1
    said = "1 of 2 ranks in the store: rank 1 missing"
    assert said in table.err and said in table.out
    as_json = traceview("analyze", store, "--format", "json")
    assert as_json.code == 1
    (rank0,) = json.loads(as_json.out)["ranks"]
    assert any(said in n["message"] and n["severity"] == "lossy" for n in rank0["notes"])
    as_csv = traceview("analyze", store, "--format", "csv")
    assert as_csv.code == 1 and said in as_csv.out.splitlines()[1]  # its caveats column
    compared = traceview("compare", store, "--format", "csv")
    assert compared.code == 1 and f"input lost: {said}" in compared.out
    assert said in traceview("ranks", store).err
    # Ingesting again makes the rank again.
    again = traceview("ingest", SWEEP / "ddp-dp2", "--store", store)
    assert "1 rank partition written, 1 unchanged" in again.out, again.out
    assert traceview("analyze", store).code == 0


@pytest.mark.cli
def test_a_trace_that_could_not_be_stored_is_said_when_the_job_is_read(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SWEEP / "ddp-dp2", run)
    (run / "rank1.pt.trace.json.gz").write_bytes(b'{"traceEvents": [{"ph": "X", "ts": NaN}]}')
    store = tmp_path / "S"
    done = traceview("ingest", run, "--store", store)
    assert done.code == 2 and "rank1.pt.trace.json.gz" in done.err
    read = traceview("analyze", store)
    assert read.code == 1
    assert "1 of 2 ranks in the store: not stored: " in read.err
    assert "rank1.pt.trace.json.gz: invalid JSON" in read.err


@pytest.mark.cli
@pytest.mark.parametrize("damage", ["deleted", "cut", "flipped"])
def test_ingest_again_repairs_a_damaged_table(tmp_path, damage):
    store = _stored(tmp_path)
    table = store / "job=ddp-dp2" / "rank=0" / "calls.parquet"
    data = table.read_bytes()
    if damage == "deleted":
        table.unlink()
    elif damage == "cut":
        table.write_bytes(data[: len(data) // 2])
    else:  # one byte in the middle: a reader of the footer alone would not notice
        middle = len(data) // 2
        table.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :])
    again = traceview("ingest", SWEEP / "ddp-dp2", "--store", store)
    assert again.code == 0, again.err
    assert "1 rank partition written, 1 unchanged" in again.out, again.out
    assert _paths_out(_json("analyze", store)) == _paths_out(_json("analyze", SWEEP / "ddp-dp2"))


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here (needs root): {done.stderr.strip()}")


def _snapshot(store: Path) -> dict[str, bytes]:
    return {str(p.relative_to(store)): p.read_bytes() for p in store.rglob("*") if p.is_file()}


@pytest.mark.cli
@pytest.mark.parametrize("what", ["unchanged", "new"])
def test_a_read_only_store_is_one_line_and_left_as_it_was(tmp_path, what):
    store = _stored(tmp_path)
    before = _snapshot(store)
    _mount("--bind", str(store), str(store))
    try:
        _mount("-o", "remount,ro,bind", str(store))
        run = SWEEP / ("ddp-dp2" if what == "unchanged" else "ddp-dp4")
        done = traceview("ingest", run, "--store", store)
    finally:
        subprocess.run(["umount", str(store)], check=True)
    assert done.code == 2, done.err
    assert done.err.count("\n") == 1 and "cannot write (Read-only file system)" in done.err
    assert _snapshot(store) == before


@pytest.mark.cli
def test_a_full_disk_is_one_line_and_leaves_the_store_as_it_was(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    _mount("-t", "tmpfs", "-o", "size=120k", "tmpfs", str(disk))
    try:
        store = disk / "S"
        assert traceview("ingest", SWEEP / "ddp-dp2", "--store", store).code == 0
        before = _snapshot(store)
        done = traceview("ingest", SWEEP / "ddp-dp4", "--store", store)
        after = _snapshot(store)
        hidden = [p.name for p in store.iterdir() if p.name.startswith(".")]
    finally:
        subprocess.run(["umount", str(disk)], check=True)
    assert done.code == 2, done.err
    assert done.err.count("\n") == 1
    assert "cannot write (No space left on device); nothing in the store was changed" in done.err
    assert "Traceback" not in done.err and "internal error" not in done.err
    assert after == before and hidden == [".writer.lock"]


@pytest.mark.cli
def test_ingest_reports_lost_input_and_files_that_are_no_traces_as_analyze_does(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SWEEP / "ddp-dp2", run)
    trace = run / "rank1.pt.trace.json.gz"
    text = gzip.decompress(trace.read_bytes())
    trace.write_bytes(gzip.compress(text[: len(text) * 2 // 3]))  # cut short: a loss
    analyzed = traceview("analyze", run)
    ingested = traceview("ingest", run, "--store", tmp_path / "S")
    assert analyzed.code == ingested.code == 1
    (warning,) = [line for line in ingested.err.splitlines() if "warning:" in line]
    assert warning in analyzed.err and "cut short" in warning
    # A file named on its own that is no trace is bad input, as for analyze.
    other = tmp_path / "other.json"
    other.write_text('{"a": 1}')
    alone = traceview("ingest", other, "--store", tmp_path / "S")
    assert alone.code == traceview("analyze", other).code == 2
    assert "not a profiler trace" in alone.err
    assert not list((tmp_path / "S").glob("job=other*"))


def _kill_a_worker(proc: subprocess.Popen[str], looks_like: str) -> int:
    """SIGKILL the first of the process's workers whose command line holds `looks_like`."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for pid in procs.descendants(proc.pid):
            if looks_like in procs.command_line(pid):
                os.kill(pid, signal.SIGKILL)
                return pid
        time.sleep(0.02)
    raise AssertionError(f"no worker like {looks_like!r} appeared")


def _four_ranks(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "ddp-dp4"
    shutil.copytree(SWEEP / "ddp-dp4", run)
    return run.parent


def _killed_once_then_finished(tmp_path: Path, engine_args: list[str], looks_like: str) -> None:
    runs, store = _four_ranks(tmp_path), tmp_path / "S"
    proc = _ingest(runs, "--store", store, *engine_args)
    _kill_a_worker(proc, looks_like)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert "3 rank partitions written, 0 unchanged, 1 failed" in out, (out, err)
    said = [line for line in err.splitlines() if line.startswith("traceview:")]  # not Ray's
    lines = [line for line in said if not line.startswith("traceview: engine: ")]
    assert len(lines) == 1, err
    line = lines[0]
    assert "rank" in line and "the process analysing it" in line and "Traceback" not in err
    read = traceview("analyze", store)
    assert read.code == 1 and "3 of 4 ranks in the store: not stored: " in read.err
    again = traceview("ingest", runs, "--store", store, *engine_args)
    assert again.code == 0, again.err
    assert "1 rank partition written, 3 unchanged" in again.out
    assert _paths_out(_json("analyze", store)) == _paths_out(_json("analyze", runs))


@pytest.mark.cli
def test_a_killed_local_worker_fails_its_trace_alone(tmp_path):
    _killed_once_then_finished(tmp_path, ["--jobs", "2"], "multiprocessing.spawn")


@pytest.mark.ray
def test_a_killed_ray_worker_fails_its_trace_alone(tmp_path):
    pytest.importorskip("ray")
    _killed_once_then_finished(tmp_path, ["--engine", "ray"], "ray::ingest_traces")


@pytest.mark.cli
@pytest.mark.parametrize("command", ["analyze", "ingest"])
def test_workers_die_with_a_killed_command(tmp_path, command):
    runs = _four_ranks(tmp_path)
    args = ["--store", str(tmp_path / "S")] if command == "ingest" else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "traceview", command, str(runs), "--jobs", "2", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while len(workers := procs.descendants(proc.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)  # two workers and the resource tracker
    assert len(workers) >= 3, [procs.command_line(p) for p in workers]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    left = procs.wait_gone(workers, timeout=10)
    assert left == [], [procs.command_line(p) for p in left]


@pytest.mark.cli
def test_ranks_never_ingested_are_said_with_how_to_add_them(tmp_path):
    # One host's folder of a two-host run (its run record names both ranks) ingested alone.
    here = tmp_path / "ddp-dp2"
    here.mkdir()
    for name in ("rank0.pt.trace.json.gz", "run.json"):
        shutil.copy2(SWEEP / "ddp-dp2" / name, here)
    store = tmp_path / "S"
    assert traceview("ingest", here, "--store", store).code == 0
    read = traceview("analyze", store)
    assert read.code == 0, read.err  # a caveat: what is read is whole, the job is not
    assert "the run record names 2 ranks, and rank 1 (" in read.out
    assert "ingest each host's folder into this job (--job NAME)" in read.out
    other = tmp_path / "host1" / "ddp-dp2"
    other.mkdir(parents=True)
    shutil.copy2(SWEEP / "ddp-dp2" / "rank1.pt.trace.json.gz", other)
    assert traceview("ingest", other, "--store", store, "--job", "ddp-dp2").code == 0
    whole = traceview("analyze", store)
    assert whole.code == 0 and "not among these traces" not in whole.out, whole.out
    # A rank ingested and then lost is said as lost (store/completeness.py), not as never added.
    shutil.rmtree(store / "job=ddp-dp2" / "rank=1")
    lost = traceview("analyze", store)
    assert lost.code == 1 and "rank 1 missing (its partition gone" in lost.out
    assert "ingest each host's folder" not in lost.out
