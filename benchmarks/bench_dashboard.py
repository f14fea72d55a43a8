"""The dashboard as a user meets it: from `traceview dashboard FOLDER` to the first page drawn in
a real browser (headless Debian Chromium), then each other page, and the server's memory.

Each repeat starts a fresh server (nothing cached), times from the moment the process is started
to the Scaling page's title and charts on screen, then opens every other page in the same
session; the server (and the processes it started) is stopped by its id at the end. Run from the
repository root, on a folder of runs (the demo's sweep by default):

    .venv/bin/python benchmarks/bench_dashboard.py                       # demo_out/sweep, 3 times
    .venv/bin/python benchmarks/bench_dashboard.py sample_traces --repeat 5
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).parents[1]
# Each page and the charts it draws with data on a sweep (the Runs page: its table).
PAGES = {"": 3, "timeline": 1, "overlap": 1, "buckets": 2, "memory": 1, "runs": 0}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
WAIT_MS = 300_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(pid: int) -> float:
    """The resident memory of a process and its children (/proc), in MB."""
    total = 0
    pids = [pid]
    while pids:
        p = pids.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        total += next(int(line.split()[1]) for line in status.splitlines() if line[:6] == "VmRSS:")
        pids += [int(c) for c in children]
    return total / 1024


def _drawn(page, url: str, charts: int) -> None:
    page.goto(url)
    page.wait_for_selector("h1", timeout=WAIT_MS)
    if charts:
        page.wait_for_function(
            f"document.querySelectorAll('.vega-embed svg, .vega-embed canvas').length >= {charts}",
            timeout=WAIT_MS,
        )
    else:
        page.wait_for_selector("[data-testid='stDataFrame']", timeout=WAIT_MS)


def once(folder: Path, browser) -> dict[str, float]:
    port = _free_port()
    started = time.monotonic()
    server = subprocess.Popen(
        [sys.executable, "-m", "traceview", "dashboard", str(folder), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                    break
            except OSError:
                if server.poll() is not None:
                    raise SystemExit("the dashboard did not start") from None
                time.sleep(0.05)
        up = time.monotonic() - started
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        times = {"server up": up}
        for path, charts in PAGES.items():
            begun = time.monotonic()
            _drawn(page, f"http://127.0.0.1:{port}/{path}", charts)
            name = path or "scaling"
            times[name] = time.monotonic() - begun
            if not path:
                times["first page from start"] = time.monotonic() - started
        times["server RSS MB"] = _rss_mb(server.pid)
        page.close()
        return times
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default=str(ROOT / "demo_out" / "sweep"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    folder = Path(args.folder)
    if not folder.is_dir():
        raise SystemExit(f"{folder}: no such folder (bash scripts/demo.sh makes demo_out/sweep)")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("needs Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    runs = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        for i in range(args.repeat):
            runs.append(once(folder, browser))
            print(f"\rrun {i + 1}/{args.repeat}", end="", file=sys.stderr)
        browser.close()
    print(file=sys.stderr)
    print(f"dashboard on {folder} ({args.repeat} fresh servers; seconds, min / median / max)")
    for key in runs[0]:
        values = [r[key] for r in runs]
        fmt = "{:,.0f}" if key.endswith("MB") else "{:.2f}"
        said = " / ".join(fmt.format(v) for v in (min(values), statistics.median(values),
                                                 max(values)))  # fmt: skip
        print(f"  {key:<24} {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
