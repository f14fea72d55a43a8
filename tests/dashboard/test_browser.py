"""The dashboard in a real headless Chromium: start the server as users do, open every page at
two laptop widths, check the key elements rendered with data and that nothing overflows or says
None, and keep a full-page screenshot of each (and of the report)."""

from __future__ import annotations

import contextlib
import os
import re
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
    "": ("Scaling", 4),  # efficiency, throughput, exposed, the what-if curve
    "timeline": ("Timeline", 1),
    "overlap": ("Overlap", 1),
    "buckets": ("Buckets and collectives", 2),
    "memory": ("Memory", 1),
    "diff": ("Diff", 1),
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


@contextlib.contextmanager
def serving(root: Path, log: Path):
    """`traceview dashboard ROOT` as users start it; its URL once it answers; stopped after."""
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "traceview", "dashboard", str(root), "--port", str(port)],
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
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("dashboard") / "server.log"
    with serving(ROOT / "sample_traces", log) as url:
        yield url, log


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


# Full-page screenshots of every page and of the report, at two laptop widths: kept (in CI, as
# its artifact) where TRACEVIEW_SCREENSHOTS says, else in this folder of the checkout.
SHOTS = Path(os.environ.get("TRACEVIEW_SCREENSHOTS", ROOT / "artifacts" / "screenshots"))
WIDTHS = (1280, 1440)

# What sticks out of its page at the right, or scrolls sideways inside it (a table too wide).
_OVERFLOW = """() => {
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  const right = Math.min(window.innerWidth, main.getBoundingClientRect().right) + 1;
  const out = [];
  for (const el of main.querySelectorAll('*')) {
    const box = el.getBoundingClientRect();
    const name = el.tagName + '.' + String(el.className).slice(0, 40);
    if (box.width > 0 && box.right > right) out.push('past the edge: ' + name);
    const x = getComputedStyle(el).overflowX;
    if ((x === 'auto' || x === 'scroll') && el.scrollWidth > el.clientWidth + 1)
      out.push('scrolls sideways: ' + name);
  }
  return out.slice(0, 5);
}"""


def _look_over(page, what: str) -> None:
    """No horizontal overflow, no None, at most one warning box: on this page as shown."""
    assert page.evaluate(_OVERFLOW) == [], what
    assert not re.search(r"\bNone\b", page.inner_text("body")), what
    boxes = page.locator("[data-testid='stExpander'] summary", has_text="Caveats:").count()
    warnings = page.locator("[data-testid='stAlertContentWarning']").count()
    assert boxes + warnings <= 1, what


def _full_page(page, shot: Path) -> None:
    """The whole page in one picture: Streamlit scrolls its main block itself, so the window
    is made as tall as what it holds first."""
    tall = page.evaluate(
        "Math.max(document.body.scrollHeight, "
        "document.querySelector('[data-testid=\"stMain\"]')?.scrollHeight || 0)"
    )
    width = page.viewport_size["width"]
    page.set_viewport_size({"width": width, "height": min(tall + 40, 16_000)})
    page.wait_for_timeout(800)  # charts re-fit to the new size
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot), full_page=True)
    page.set_viewport_size({"width": width, "height": 1000})
    assert shot.stat().st_size > 10_000


@pytest.mark.browser
def test_every_page_at_laptop_widths(server):
    url, log = server
    assert "traceview dashboard on http://127.0.0.1:" in log.read_text()
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for width in WIDTHS:
            page = browser.new_page(viewport={"width": width, "height": 1000})
            for path, (title, charts) in PAGES.items():
                what = f"/{path} at {width} px"
                try:
                    _check_page(page, f"{url}/{path}", title, charts)
                except playwright.Error as e:  # name the page: a timeout alone does not
                    pytest.fail(f"{what}: {e}\n{log.read_text()[-2000:]}")
                _look_over(page, what)
                _full_page(page, SHOTS / f"dashboard-{path or 'scaling'}-{width}.png")
            page.close()
        browser.close()


@pytest.mark.browser
def test_the_report_draws_every_chart_offline(tmp_path):
    from tests.cli.run_cli import traceview

    report = tmp_path / "report.html"
    done = traceview("report", ROOT / "sample_traces" / "cpu_sweep", "-o", report)
    assert done.code == 0, done.err
    assert report.stat().st_size < 1_000_000  # twelve runs, every chart
    charts = report.read_text().count('class="chart"')
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for width in WIDTHS:
            page = browser.new_page(viewport={"width": width, "height": 900})
            requests: list[str] = []
            errors: list[str] = []
            page.on("request", lambda r, seen=requests: seen.append(r.url))
            page.on("pageerror", lambda e, seen=errors: seen.append(str(e)))
            page.goto(report.as_uri())
            page.wait_for_function(
                f"document.querySelectorAll('.chart svg, .chart canvas').length >= {charts}",
                timeout=WAIT_MS,
            )
            # Every chart and table fits the page's width: no horizontal scrolling.
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            assert not re.search(r"\bNone\b", page.inner_text("body"))
            shot = SHOTS / f"report-{width}.png"
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot), full_page=True)
            assert errors == [] and [u for u in requests if not u.startswith("file:")] == []
            page.close()
        browser.close()


@pytest.mark.browser
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


@pytest.mark.browser
def test_the_dashboard_opens_on_a_good_run_and_says_which_failed(tmp_path):
    # A run whose traces are broken, with more of them than the good run: never opened on.
    root = tmp_path / "runs"
    shutil.copytree(ROOT / "sample_traces" / "cpu_sweep" / "ddp-dp2", root / "good")
    (root / "broken").mkdir()
    for rank in range(4):
        (root / "broken" / f"rank{rank}.json").write_text("{ not json")
    log = tmp_path / "server.log"
    with serving(root, log) as url, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        try:
            page.goto(f"{url}/timeline")
            page.wait_for_selector(".vega-embed svg, .vega-embed canvas", timeout=WAIT_MS)
            chosen = page.locator("[data-testid='stSidebar'] input[aria-label='run']")
            assert chosen.input_value() == "good"
            assert page.locator("[data-testid='stAlertContentError']").count() == 0
            box = page.locator("[data-testid='stSidebar'] [data-testid='stExpander']",
                               has_text="1 run could not be read")  # fmt: skip
            assert box.count() == 1
            box.locator("summary").click()
            page.wait_for_selector("text=broken: ", timeout=WAIT_MS)
            said = box.inner_text()
            assert said.count("broken: ") == 1 and "JSON" in said
            _look_over(page, "a good run beside a broken one")
        except playwright.Error as e:
            pytest.fail(f"default run: {e}\n{log.read_text()[-2000:]}")
        finally:
            browser.close()
