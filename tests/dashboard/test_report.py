"""`traceview report`: the dashboard's charts in one HTML file that needs no network."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.run_cli import traceview

ROOT = Path(__file__).parents[2]
SWEEP = ROOT / "sample_traces" / "cpu_sweep"


def test_report_is_self_contained_with_every_section(tmp_path):
    out = tmp_path / "report.html"
    result = traceview("report", SWEEP, "--output", out)
    assert result.code == 0, result.err
    html = out.read_text()
    assert not re.search(r'<script[^>]+src="https?://', html)  # scripts inline, no CDN
    spec = json.loads(re.search(r"const spec = (\{.*?\});\n", html, re.S).group(1))
    titles = json.dumps(spec, ensure_ascii=False)
    for section in (
        "Efficiency vs DP degree",
        "Throughput",
        "Exposed communication",
        "Overlap · ",
        "Collectives · ",
        "Model states · ",
    ):
        assert section in titles
    assert "zero3-dp4" in titles
    # Strategies, overlap parts and memory sources are different domains: no shared colour scale.
    assert spec["resolve"]["scale"]["color"] == "independent"


def test_report_needs_an_output_file():
    result = traceview("report", SWEEP)
    assert result.code == 2 and "report needs --output FILE.html" in result.err


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
    assert "Caveats" in html and "noisy: step times vary 6.0" in html


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
