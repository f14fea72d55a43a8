"""`traceview dashboard [PATH]`: the Streamlit dashboard on a folder of runs."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from types import FrameType

from traceview.dashboard import MAX_UPLOAD_MB, ROOT_ENV
from traceview.errors import EXIT_INTERRUPTED, TraceviewError
from traceview.remote import local_only

APP = Path(__file__).parents[2] / "dashboard" / "app.py"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "dashboard",
        help="browse runs in a local web dashboard",
        description="Start the Streamlit dashboard on a folder of runs "
        "(default: sample_traces/). It reads only inside that folder.",
    )
    p.add_argument("path", nargs="?", default="sample_traces", metavar="PATH")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: localhost only)")
    p.add_argument("--port", type=port_number, default=8501, help="1 to 65535 (default 8501)")
    p.set_defaults(run=run)


def port_number(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number (1 to 65535): {port}")
    return port


def check_free(host: str, port: int) -> None:
    """A port in use, or an address not of this machine, is one line before Streamlit starts."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise TraceviewError(f"--host {host}: not an address here ({e.strerror})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will
        try:
            s.bind(address)
        except OSError as e:
            raise TraceviewError(
                f"cannot serve on {host}:{port} ({e.strerror}); choose another --port"
            ) from None


def run(args: argparse.Namespace) -> int:
    local_only(args.path, "the dashboard serves a folder on a file system (uploads are saved "
               "there)", "ingest the traces into a store on disk and open that")  # fmt: skip
    root = Path(args.path)
    if not root.is_dir():
        raise TraceviewError(f"{root}: no such folder")
    try:
        import streamlit  # noqa: F401
    except ImportError:
        raise TraceviewError(
            "the dashboard needs streamlit: pip install 'traceview[dashboard]'"
        ) from None
    check_free(args.host, args.port)
    print(
        f"traceview dashboard on http://{args.host}:{args.port} reading {root.resolve()}",
        flush=True,
    )
    cmd = [
        sys.executable,
        "-m",
        "traceview.dashboard.serve",  # Streamlit's command line, the first page loaded beside
        "run",
        str(APP),
        "--server.address",
        args.host,
        "--server.port",
        str(args.port),
        "--server.headless",
        "true",
        "--server.maxUploadSize",
        str(MAX_UPLOAD_MB),
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",  # no "Deploy" button, no developer menu: a viewer's page
        "minimal",
        "--",
        str(root),
    ]
    env = {**os.environ, ROOT_ENV: str(root.resolve())}
    return serve(cmd, env)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def serve(cmd: list[str], env: dict[str, str]) -> int:
    """Run the server until it exits, passing on the signals that stop this process: stopping
    `traceview dashboard` (Ctrl-C, kill, a closed terminal) stops the server it started. Exit
    code: the server's, or 130 (interrupted, as every command) when a signal stopped it."""
    server = subprocess.Popen(cmd, env=env)
    stopped_by: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        stopped_by.append(signum)
        if server.poll() is None:
            server.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in STOP_SIGNALS}
    try:
        code = server.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if server.poll() is None:  # this process is going: the server must not outlive it
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    return EXIT_INTERRUPTED if stopped_by else code
