"""The dashboard as a user meets it: from `traceview dashboard FOLDER` to the first page drawn in
a real browser (headless Debian Chromium), then each other page: its time, the bytes the server
sent the browser for it, and the server's memory.

Each repeat starts a fresh server (nothing cached), times from the moment the process is started
to the Scaling page's title and charts on screen, then opens every other page in the same
session (a page is drawn when its charts are on screen and the server has finished its script);
the server (and the processes it started) is stopped by its id at the end. Run from the
repository root, on a folder of runs (the demo's sweep by default), or on a store of a job of
many ranks it synthesizes (benchmarks/bench_store.py's tiled NCCL ranks; kept between runs):

    .venv/bin/python benchmarks/bench_dashboard.py                       # demo_out/sweep, 3 times
    .venv/bin/python benchmarks/bench_dashboard.py sample_traces --repeat 5
    .venv/bin/python benchmarks/bench_dashboard.py --ranks 1024 --mb 8   # a 1,024-rank store
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from traceview.store.layout import MARKER, STORE_VERSION

ROOT = Path(__file__).parents[1]
# Each page and the fewest charts it draws with data (the Runs page: its table; Memory: none
# without run records; Diff: one run, its halves).
PAGES = {"": 2, "timeline": 1, "overlap": 1, "buckets": 1, "memory": 0, "diff": 1, "runs": 0}
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
    """Opened, its script run to the end (Streamlit's own mark on the app), and every chart it
    sent drawn (each Vega view holding its SVG or canvas)."""
    page.goto(url)
    page.wait_for_function(
        f"""(() => {{
            const app = document.querySelector("[data-testid='stApp']");
            if (!app || app.getAttribute("data-test-script-state") !== "notRunning") return false;
            const views = [...document.querySelectorAll(".vega-embed")];
            return views.length >= {charts} && views.every(v => v.querySelector("svg, canvas"));
        }})()""",
        timeout=WAIT_MS,
    )
    page.wait_for_selector("h1", timeout=WAIT_MS)
    if url.endswith("/runs"):
        page.wait_for_selector("[data-testid='stDataFrame']", timeout=WAIT_MS)


class Received:
    """Bytes the browser received over the page's websocket (Streamlit's messages: the data)."""

    def __init__(self, page) -> None:
        self.bytes = 0
        page.on("websocket", lambda ws: ws.on("framereceived", self._add))

    def _add(self, payload: bytes | str) -> None:
        self.bytes += len(payload)


def once(folder: Path, browser, pages: dict[str, int] = PAGES) -> dict[str, float]:
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
        received = Received(page)
        times = {"server up": up}
        sent: dict[str, float] = {}
        rss = 0.0
        for path, charts in pages.items():
            begun, before = time.monotonic(), received.bytes
            _drawn(page, f"http://127.0.0.1:{port}/{path}", charts)
            name = path or "scaling"
            times[name] = time.monotonic() - begun
            sent[f"{name} MB sent"] = (received.bytes - before) / 1e6
            rss = max(rss, _rss_mb(server.pid))
            if not path:
                times["first page from start"] = time.monotonic() - started
        page.close()
        return {**times, **sent, "server RSS MB (largest)": rss}
    finally:
        server.terminate()
        server.wait(timeout=30)


def many_rank_store(ranks: int, mb: float, one_step: bool = False) -> Path:
    """bench_out/dashboard/store-<ranks>x<mb>MB: a store of one job of `ranks` tiled NCCL rank
    traces, or of the one-step excerpt as it is (store-<ranks>x-one-step; made once, kept)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_store import synthesize

    out = ROOT / "bench_out" / "dashboard"
    store = out / (f"store-{ranks}x-one-step" if one_step else f"store-{ranks}x{mb:g}MB")
    if store.exists() and _store_version(store) < STORE_VERSION:  # an older traceview's: made anew
        shutil.rmtree(store)
    if not store.exists():
        job = synthesize(out / f"traces-{ranks}", ranks, mb, one_step=one_step)
        partial = store.with_name(store.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        command = [sys.executable, "-m", "traceview", "ingest", str(job), "--store", str(partial)]
        subprocess.run(command, check=True)
        partial.rename(store)
        shutil.rmtree(job)  # the store holds what the dashboard reads
    return store


def chromium_path() -> str:
    """Debian's chromium, the browser the benchmarks and tests drive."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise SystemExit("needs Debian's chromium (apt-get install chromium)")
    return found


def _store_version(store: Path) -> int:
    return int(json.loads((store / MARKER).read_text())["store_version"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default=str(ROOT / "demo_out" / "sweep"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ranks", type=int, help="a store of a job of this many ranks instead")
    parser.add_argument("--mb", type=float, default=8, help="about this many MB per rank trace")
    args = parser.parse_args()
    folder = many_rank_store(args.ranks, args.mb) if args.ranks else Path(args.folder)
    if not folder.is_dir():
        raise SystemExit(f"{folder}: no such folder (bash scripts/demo.sh makes demo_out/sweep)")
    chromium = chromium_path()
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
        fmt = "{:,.0f}" if "RSS" in key else "{:.2f}"
        said = " / ".join(fmt.format(v) for v in (min(values), statistics.median(values),
                                                 max(values)))  # fmt: skip
        print(f"  {key:<24} {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
