"""The dashboard in a real headless Chromium: start the server as users do, open every page,
check the key elements rendered with data, and save a screenshot of each."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PAGES = {
    "": ("Scaling", 3),
    "timeline": ("Timeline", 1),
    "overlap": ("Overlap", 1),
    "buckets": ("Buckets and collectives", 2),
    "memory": ("Memory", 1),
    "runs": ("Runs", 0),
}
# The flags a sandboxed machine with no outside network needs (see the env notes).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

if CHROMIUM is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("CI must install Debian's chromium for the browser tests (.ci/run)")
    pytest.skip("no chromium on this machine", allow_module_level=True)
playwright = pytest.importorskip("playwright.sync_api")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("dashboard") / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "traceview",
                "dashboard",
                str(ROOT / "sample_traces"),
                "--port",
                str(port),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/_stcore/health", timeout=2
                ) as r:
                    if r.read() == b"ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                pytest.fail(f"dashboard did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}", log
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow
def test_every_page_renders_with_data(server, tmp_path):
    url, log = server
    assert "traceview dashboard on http://127.0.0.1:" in log.read_text()
    shots = Path(os.environ.get("TRACEVIEW_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        for path, (title, charts) in PAGES.items():
            try:
                _check_page(page, f"{url}/{path}", title, charts)
            except playwright.Error as e:  # name the page: a timeout alone does not
                pytest.fail(f"page /{path}: {e}\n{log.read_text()[-2000:]}")
            shot = shots / f"{path or 'scaling'}.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
        browser.close()


# Generous: on a busy 2-core machine the first page parses every sample run.
WAIT_MS = 180_000


def _check_page(page, url: str, title: str, charts: int) -> None:
    page.goto(url)
    page.wait_for_selector("h1", timeout=WAIT_MS)
    assert page.locator("h1").first.inner_text() == title
    if charts:
        page.wait_for_selector(".vega-embed svg, .vega-embed canvas", timeout=WAIT_MS)
        page.wait_for_function(
            f"document.querySelectorAll('.vega-embed').length >= {charts}", timeout=WAIT_MS
        )
    else:
        page.wait_for_selector("[data-testid='stDataFrame']", timeout=WAIT_MS)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.get_by_role("button", name="Deploy").count() == 0  # a viewer's page
    page.wait_for_timeout(500)


@pytest.mark.slow
def test_the_report_draws_every_chart_offline(tmp_path):
    from tests.cli.run_cli import traceview

    report = tmp_path / "report.html"
    sweep = ROOT / "sample_traces" / "cpu_sweep"
    done = traceview("report", sweep / "ddp-dp2", sweep / "zero3-dp4", "-o", report)
    assert done.code == 0, done.err
    charts = report.read_text().count('class="chart"')
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(report.as_uri())
        page.wait_for_function(
            f"document.querySelectorAll('.chart svg, .chart canvas').length >= {charts}",
            timeout=WAIT_MS,
        )
        # Every chart fits the page's width: no horizontal scrolling on a laptop screen.
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        browser.close()
    assert errors == [] and [u for u in requests if not u.startswith("file:")] == []


@pytest.mark.slow
def test_an_uploaded_trace_gets_the_run_pages(server):
    url, log = server
    trace = ROOT / "sample_traces" / "cpu_sweep" / "ddp-dp2" / "rank1.pt.trace.json.gz"
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        try:
            page.goto(f"{url}/runs")
            page.wait_for_selector("input[type=file]", state="attached", timeout=WAIT_MS)
            page.set_input_files("input[type=file]", str(trace))
            page.wait_for_selector(f"text=upload: {trace.name}", timeout=WAIT_MS)
            # Within the session (the sidebar's links): the timeline of the uploaded trace.
            page.get_by_role("link", name="Timeline").click()
            page.wait_for_selector(".vega-embed svg, .vega-embed canvas", timeout=WAIT_MS)
            chosen = page.locator("[data-testid='stSidebar'] input[aria-label='run']")
            assert chosen.input_value() == f"upload: {trace.name}"
            assert page.locator("[data-testid='stException']").count() == 0
        except playwright.Error as e:
            pytest.fail(f"upload: {e}\n{log.read_text()[-2000:]}")
        finally:
            browser.close()
