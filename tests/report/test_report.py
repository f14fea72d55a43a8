"""`traceview report`: the dashboard's charts in one HTML file that needs no network."""

import base64
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.run_cli import traceview

ROOT = Path(__file__).parents[2]
SWEEP = ROOT / "sample_traces" / "cpu_sweep"


@pytest.mark.cli
def test_report_is_a_self_contained_document(tmp_path):
    out = tmp_path / "report.html"
    result = traceview("report", SWEEP, "--output", out)
    assert result.code == 0, result.err
    html = out.read_text()
    assert not re.search(r'<script[^>]+src="https?://', html)  # scripts inline, no CDN
    bundle = unpacked(html, "charting")  # gzipped in the file, inflated by the browser
    assert bundle.count("vegaEmbed = ") + bundle.count("vegaEmbed=") >= 1  # the bundle, once
    # A title, contents linking every section, the summary across runs, findings, scaling, and a
    # section per run named relative to what the runs share (not an absolute path).
    assert "<h1>traceview report</h1>" in html
    headings = re.findall(r'<h2 id="([^"]+)">([^<]+)</h2>', html)
    assert [h for h, _ in headings[:3]] == ["summary", "findings", "scaling"]
    runs = [name for anchor, name in headings if anchor.startswith("run-")]
    assert len(runs) == 12 and "zero3-dp4" in runs and not any("/" in r for r in runs)
    for anchor, _ in headings:
        assert f'href="#{anchor}"' in html
    summary = html[html.index('id="summary"') : html.index('id="findings"')]
    assert summary.count("<tr>") == 13  # a header and 12 runs
    assert "samples/s" in summary and "model states MB (theory)" in summary
    findings = html[html.index('id="findings"') : html.index('id="scaling"')]
    assert "prefetch" in findings and "bucket_cap_mb" in findings
    scaling = html[html.index('id="scaling"') :]
    assert scaling.count("<h3>Predictions checked against measured runs</h3>") == 1
    assert scaling.count("predicted from DP 2 and DP 1") == 4  # a line per strategy's DP 4
    for section in ("Overlap per rank and step", "Most exposed collectives", "One step's timeline",
                    "Model states beside the ZeRO theory"):  # fmt: skip
        assert html.count(f"<h3>{section}</h3>") == 12
    assert "bucket 2" in html  # the most exposed DDP bucket, named
    specs = json.loads(unpacked(html, "charts"))
    assert len(specs) == html.count('class="chart"')
    # Every chart as wide as the page; each timeline names its lanes rank by rank.
    assert {s["width"] for s in specs} == {"container"}
    drawn = [s for s in specs if "encoding" in s]  # the efficiency chart is layered
    lanes = [s["encoding"]["y"]["sort"] for s in drawn if s["encoding"]["x"]["field"] == "start_ms"]
    assert len(lanes) == 12 and "rank 3 · training thread" in lanes[-1]
    # Under 1 MB for the twelve runs, every chart kept.
    assert len(html.encode()) < 1_000_000


def unpacked(html: str, script: str) -> str:
    """A script the report carries gzipped, in base64 (static.packed), as the browser reads it."""
    found = re.search(rf'<script type="application/gzip" id="{script}">([^<]*)</script>', html)
    assert found, script
    return gzip.decompress(base64.b64decode(found.group(1))).decode("utf-8")


@pytest.mark.cli
def test_report_needs_an_output_file():
    result = traceview("report", SWEEP)
    assert result.code == 2 and "report needs --output FILE.html" in result.err


@pytest.mark.cli
def test_report_carries_the_caveats_of_noisy_runs(tmp_path):
    import shutil

    for name in ("ddp-dp1", "ddp-dp2"):
        shutil.copytree(SWEEP / name, tmp_path / name)
    record = json.loads((tmp_path / "ddp-dp2" / "run.json").read_text())
    record["step_seconds"] = [1.0, 0.1, 0.6, 0.1, 0.1, 0.2, 0.2]
    (tmp_path / "ddp-dp2" / "run.json").write_text(json.dumps(record))
    out = tmp_path / "report.html"
    assert traceview("report", tmp_path, "--output", out).code == 0
    html = out.read_text()
    # Said once, beside the run's row of the summary (not again in a list below it).
    summary = html[html.index('id="summary"') : html.index('id="findings"')]
    assert html.count("noisy: step times vary 6.0") == 1 and "noisy: step times vary" in summary


@pytest.mark.cli
@pytest.mark.parametrize("missing", ["altair", "vl_convert"])
def test_report_without_the_dashboard_extra_names_it_in_one_line(tmp_path, missing):
    code = (
        f"import sys; sys.modules[{missing!r}] = None\n"  # as if never installed
        "from traceview.cli import main\n"
        f"sys.exit(main(['report', {str(ROOT / 'sample_traces' / 'cpu_sweep' / 'ddp-dp2')!r}, "
        f"'-o', {str(tmp_path / 'r.html')!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr == (
        f"traceview: error: report needs the dashboard's charting ({missing}): "
        "pip install 'traceview[dashboard]'\n"
    )
    assert not (tmp_path / "r.html").exists()


@pytest.mark.cli
@pytest.mark.parametrize("hard", [True, False])
def test_report_under_an_address_space_limit(tmp_path, hard):
    # V8 reserves tens of GB of address space as it starts: under a hard limit the report is
    # one line and exit 2 (not a crash dump); under a soft one it lifts the limit and renders.
    import resource

    limit = 8 << 30

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit if hard else resource.RLIM_INFINITY))

    out = tmp_path / "report.html"
    out.write_text("kept")
    cold = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}  # the scripts to be made
    done = subprocess.run(
        [sys.executable, "-m", "traceview", "report", str(SWEEP / "ddp-dp2"), "-o", str(out)],
        capture_output=True,
        text=True,
        preexec_fn=limited,
        timeout=300,
        env=cold,
    )
    if hard:
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "ulimit -v" in done.stderr
        assert out.read_text() == "kept"
    else:
        assert done.returncode == 0, done.stderr
        assert "vegaEmbed" in unpacked(out.read_text(), "charting")


def test_the_charting_scripts_are_made_once_and_a_damaged_copy_again(tmp_path, monkeypatch):
    from traceview.report import htmlpage

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    made = htmlpage.packed_charting_script()
    (kept,) = (tmp_path / "traceview").iterdir()
    assert (
        kept.read_text() == made and "vegaEmbed" in gzip.decompress(base64.b64decode(made)).decode()
    )
    kept.write_text(made[: len(made) // 2 // 4 * 4])  # cut: still base64, no longer whole
    assert htmlpage.packed_charting_script() == made and kept.read_text() == made
    # Where the cache cannot be written, the scripts are made each time, and nothing fails.
    monkeypatch.setenv("XDG_CACHE_HOME", str(kept))  # a file, not a folder
    assert htmlpage.packed_charting_script() == made


@pytest.mark.cli
def test_the_report_says_where_the_ranks_collectives_do_not_line_up(tmp_path):
    from tests.analysis.test_desync import everyone, job

    calls = {r: everyone() for r in (0, 1, 3)}
    calls[2] = everyone(s for s in range(1, 9) if s != 3)
    out = tmp_path / "report.html"
    assert traceview("report", job(tmp_path, calls), "--output", out).code == 0
    html = out.read_text()
    section = html[html.index("<h3>Do the ranks' collectives line up?</h3>") :]
    assert "31 calls of 1 group lined up by sequence numbers: 1 sign" in section
    assert "<li>rank 2 has no call at sequence number 3 of group 7, where ranks 0, 1, 3" in section
    # The finding says it too, at the top.
    findings = html[html.index('id="findings"') : html.index('id="scaling"')]
    assert "the ranks&#x27; collectives do not line up" in findings


@pytest.mark.cli
def test_the_report_draws_the_critical_path_of_a_job_of_ranks(tmp_path):
    from tests.analysis.test_critical_path import late_backward

    out = tmp_path / "report.html"
    assert traceview("report", late_backward(tmp_path / "job"), "--output", out).code == 0
    html = out.read_text()
    section = html[html.index("<h3>What set each step's end: the critical path</h3>") :]
    section = section[: section.index("<h3>Most exposed")]
    # rank 1's compute 450, rank 0's transfer 100 and compute 50 of the step's 600 µs.
    assert (
        "rank 1&#x27;s compute 75 %, rank 0&#x27;s transfer 17 %, rank 0&#x27;s compute 8 %"
        in section
    )
    assert "The slowest step, 1 (0.600 ms" in section and section.count('class="chart"') == 2


@pytest.mark.cli
def test_a_report_of_two_runs_says_where_the_step_went_between_them(tmp_path):
    from tests.analysis.test_diff import run

    a, b = run(tmp_path, "a", 200), run(tmp_path, "b", 400)
    out = tmp_path / "report.html"
    assert traceview("report", a, b, "--output", out).code == 0
    html = out.read_text()
    assert '<a href="#diff">B against A</a>' in html
    section = html[html.index('<h2 id="diff">') : html.index('<h2 id="run-0">')]
    # tests/analysis/test_diff.py: the all-reduce from 200 to 400 µs, exposed 0.1 → 0.3 ms.
    assert "<td>exposed communication</td><td>0.100</td><td>0.300</td>" in section.replace(
        '<td class="name">', "<td>"
    )
    assert "beyond noise" in section and "0.10 → 0.30" in section
    flat = section.replace('<td class="name">', "<td>")
    assert "changed most on one rank" in section  # its one rank, against itself
    assert "<td>0</td><td>exposed communication</td><td>0.100</td><td>0.300</td>" in flat
    # Two runs of different GPU models: said as set-up that differs.
    from tests.analysis.test_diff import ranks_run

    gpus = [[{"id": 0, "name": n}] for n in ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3")]
    c, e = (ranks_run(tmp_path, n, {0: [600] * 4}, deviceProperties=g)
            for n, g in zip(("c", "e"), gpus, strict=True))  # fmt: skip
    assert traceview("report", c, e, "--output", out).code == 0
    differs = out.read_text()
    assert "set-up that differs" in differs and "NVIDIA H100 80GB HBM3" in differs
    # A report of one run has no such section.
    assert traceview("report", a, "--output", out).code == 0
    assert 'id="diff"' not in out.read_text()
