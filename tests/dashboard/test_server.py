"""`traceview dashboard` as a real process: stopping it stops the Streamlit server it started."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
ROOT = Path(__file__).parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
            return r.read() == b"ok"
    except OSError:
        return False


@pytest.mark.browser
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_stopping_the_dashboard_stops_its_server(tmp_path, stop):
    port = _free_port()
    command = ["traceview", "dashboard", str(ROOT / "sample_traces"), "--port", str(port)]
    cli = subprocess.Popen(
        [sys.executable, "-m", *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    servers: list[int] = []
    try:
        deadline = time.monotonic() + 90
        while not _healthy(port):
            assert cli.poll() is None and time.monotonic() < deadline, "the dashboard did not start"
            time.sleep(0.5)
        servers = _children(cli.pid)
        assert servers, "the server runs as a child of traceview dashboard"
        cli.send_signal(stop)
        assert cli.wait(timeout=30) == 130  # interrupted, as every command says it
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in servers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(p) for p in servers), "the server outlived traceview dashboard"
        assert not _healthy(port)
    finally:
        for pid in [cli.pid, *servers]:  # whatever happened, nothing is left running
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        cli.wait(timeout=30)


def _listening(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net/tcp* write them) listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, hex_port = local.rsplit(":", 1)
                if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                    found.add(address)
    return found


@pytest.mark.browser
def test_streamlit_run_as_documented_binds_localhost_and_sends_no_statistics(tmp_path):
    port = _free_port()
    log = tmp_path / "streamlit.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "traceview/dashboard/app.py",
             "--server.port", str(port), "--", "sample_traces"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while not _healthy(port):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        assert _listening(port) == {"0100007F"}  # 127.0.0.1 only
        assert "usage statistics" not in log.read_text().lower()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
