"""`traceview ingest --engine ray` on a Ray cluster of two hosts (tests/harness/hosts.py): the
head on host0, where the command runs, a worker on host1, whose own disk alone holds the run's
traces (the same path on host0 is an empty disk of its own); the store is on a file system both
see. What a user with traces on several nodes' local disks does (docs/store.md)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests import procs
from tests.cli.run_cli import traceview
from tests.harness.hosts import hosts_or_skip, start, stop

pytest.importorskip("ray")
SWEEP = Path(__file__).parents[2] / "sample_traces" / "cpu_sweep"
RAY = str(Path(sys.executable).parent / "ray")
# A cluster on its own links, for this test alone: Ray's token authentication is left off.
ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
SMALL = ["--num-cpus=1", "--object-store-memory=100000000", "--disable-usage-stats"]
# Ray's sockets live under its temp folder, whose path must stay short (a socket's name is at
# most 107 bytes); its own, so that the machine's /tmp/ray (which ray.init() reads for the
# last cluster started here) never names this one.


def _wait_for(log: Path, text: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if text in log.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise AssertionError(f"{log.name}: no {text!r}\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster")
    local = root / "local"  # each host's own disk is bound here
    temp = tempfile.mkdtemp(prefix="tvray")
    with hosts_or_skip(root, 2, local) as hosts:
        shutil.copytree(SWEEP / "ddp-dp2", hosts[1].disk / "job")  # on host1's disk only
        for host, rank in zip(hosts, (0, 1), strict=True):  # each rank on its own host's disk
            (host.disk / "split").mkdir()
            shutil.copy2(SWEEP / "ddp-dp2" / f"rank{rank}.pt.trace.json.gz", host.disk / "split")
        shutil.copy2(SWEEP / "ddp-dp2" / "run.json", hosts[0].disk / "split")
        small = [*SMALL, f"--temp-dir={temp}"]
        head_at = f"{hosts[0].address}:6379"
        started = []
        try:
            log = root / "head.log"
            started.append(start(hosts[0], root, local, [
                RAY, "start", "--head", "--block", f"--node-ip-address={hosts[0].address}",
                "--port=6379", "--include-dashboard=false", *small], log, ENV))  # fmt: skip
            _wait_for(log, "Ray runtime started", started[-1], 180)
            log = root / "worker.log"
            started.append(start(hosts[1], root, local, [
                RAY, "start", "--block", f"--address={head_at}",
                f"--node-ip-address={hosts[1].address}", *small], log, ENV))  # fmt: skip
            _wait_for(log, "Ray runtime started", started[-1], 180)
            yield hosts, root, local, head_at
        finally:
            left = stop(started, grace=30)
            shutil.rmtree(temp, ignore_errors=True)
            assert left == [], [procs.command_line(p) for p in left]  # Ray stopped, by id


def _ingest(cluster, store: Path, path: str = "job") -> tuple[subprocess.Popen[bytes], Path]:
    hosts, root, local, head_at = cluster
    log = root / f"{store.name}.log"
    command = [sys.executable, "-m", "traceview", "ingest", str(local / path), "--store",
               str(store), "--engine", "ray", "--ray-address", head_at]  # fmt: skip
    return start(hosts[0], root, local, command, log, ENV), log


def _analyzed(path: Path) -> dict:
    doc = json.loads(traceview("analyze", path, "--format", "json").out)
    for rank in doc["ranks"]:
        rank.pop("trace"), rank.pop("job")  # where each was read from differs
    return doc["ranks"]


@pytest.mark.ray
def test_traces_on_a_worker_s_own_disk_are_ingested_there(cluster):
    hosts, root, _, _ = cluster
    store = root / "store"
    proc, log = _ingest(cluster, store)
    assert proc.wait(timeout=300) == 0, log.read_text()
    said = log.read_text()
    assert "Ray joined" in said and "1 job; 2 rank partitions written, 0 unchanged" in said
    # The store is the one an ingest on host1 itself makes.
    here = root / "here"
    assert traceview("ingest", hosts[1].disk / "job", "--store", here).code == 0
    assert _analyzed(store) == _analyzed(here)


@pytest.mark.ray
def test_a_job_whose_ranks_are_on_both_hosts_disks_is_ingested_whole_from_either(cluster):
    # The harness's layout on two hosts: the same folder on each, a rank in each (the run
    # record on rank 0's): the command runs on host0, which holds rank 0.
    _, root, _, _ = cluster
    store = root / "split-store"
    proc, log = _ingest(cluster, store, "split")
    assert proc.wait(timeout=300) == 0, log.read_text()
    doc = json.loads(traceview("analyze", store, "--format", "json").out)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    assert not [n for r in doc["ranks"] for n in r["notes"] if n["severity"] != "info"]
    assert _analyzed(store) == _analyzed(SWEEP / "ddp-dp2")


@pytest.mark.ray
def test_a_worker_killed_mid_ingest_leaves_the_store_whole_and_a_rerun_completes_it(cluster):
    hosts, root, _, _ = cluster
    store = root / "killed"
    proc, log = _ingest(cluster, store)
    deadline, killed = time.monotonic() + 120, None
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        for entry in os.listdir("/proc"):
            if entry.isdigit() and "ray::_ingest_here" in procs.command_line(int(entry)):
                os.kill(int(entry), signal.SIGKILL)
                killed = int(entry)
                break
        time.sleep(0.01)
    assert killed is not None, log.read_text()
    assert proc.wait(timeout=300) == 1, log.read_text()  # input lost: said, not a crash
    said = log.read_text()
    assert f"on node {hosts[1].address}" in said and "Traceback" not in said
    # Nothing of the killed ingest is in place: the store holds no partition yet.
    read = traceview("analyze", store)
    assert read.code == 2 and "no trace files" in read.err
    again, log = _ingest(cluster, store)
    assert again.wait(timeout=300) == 0, log.read_text()
    here = root / "here-again"
    assert traceview("ingest", hosts[1].disk / "job", "--store", here).code == 0
    assert _analyzed(store) == _analyzed(here)


@pytest.mark.ray
def test_what_a_node_refuses_is_bad_input_not_lost_input(cluster):
    hosts, root, local, head_at = cluster
    (hosts[1].disk / "empty").mkdir()  # on host1's disk: a folder without traces
    log = root / "refused.log"
    command = [sys.executable, "-m", "traceview", "ingest", str(local / "empty"), "--store",
               str(root / "refused"), "--engine", "ray", "--ray-address", head_at]  # fmt: skip
    proc = start(hosts[0], root, local, command, log, ENV)
    assert proc.wait(timeout=300) == 2, log.read_text()
    said = log.read_text()
    assert f"on node {hosts[1].address}: " in said and "no trace files" in said
    assert "Traceback" not in said
