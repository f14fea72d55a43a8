"""Every text output in plain words: counts with real plurals, never "rank(s)", and one glyph
for a value not known (–), never a bare '-' in its place (docs/glossary.md)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.cli.run_cli import traceview

ROOT = Path(__file__).parents[2]
SWEEP = ROOT / "sample_traces" / "cpu_sweep"
REAL = ROOT / "tests" / "fixtures" / "traces"

# "rank(s)", "step(s)": a count that did not choose its number.
UNCHOSEN_PLURAL = re.compile(r"\b[A-Za-z]+\(s\)")
# "1 ranks": a plural the count does not take.
ONE_PLURAL = re.compile(
    r"(?<![\d.,])\b1 (?:rank|step|call|trace|rank-step|run|job|group|sign|size|cluster|file|"
    r"folder|thread|core|node|time|cycle|partition|bucket|collective)s\b"
)
# A '-' standing alone where a value goes: a table cell (followed by a column gap or the line's
# end) or a value after a colon. A list's bullet ("  - text") is followed by one space and text.
BARE_DASH = re.compile(r"(?:(?<=\s)|(?<=:))-(?=\s{2,}|$|[,;)])", re.MULTILINE)


def plain(text: str, what: str) -> None:
    assert not UNCHOSEN_PLURAL.findall(text), (what, UNCHOSEN_PLURAL.findall(text))
    assert not ONE_PLURAL.findall(text), (what, ONE_PLURAL.findall(text))
    bare = [line for line in text.splitlines() if BARE_DASH.search(line)]
    assert not bare, (what, bare[:3])


def test_the_checks_catch_what_they_are_for():
    with pytest.raises(AssertionError):
        plain("moved between ranks 0 time(s) per step", "plural")
    with pytest.raises(AssertionError):
        plain("B: w8 (1 rank-steps)", "one, plural")
    with pytest.raises(AssertionError):
        plain("  window ms   1.0   -   2.0", "a bare dash in a cell")
    with pytest.raises(AssertionError):
        plain("  overlap %   12.1\n  E(N)        -", "a bare dash at the line's end")
    plain("  - ddp-dp2: 71% of the exposed communication\n  E(N)  –  1–4", "bullets, ranges")
    plain("1 of 2 ranks; 0.1 steps; 11 ranks; 1 rank", "counts that read right")


@pytest.fixture(scope="module")
def jobs(tmp_path_factory) -> Path:
    """The sample sweep's runs beside real traces without a run record (unknowns to print)."""
    root = tmp_path_factory.mktemp("jobs")
    for run in ("ddp-dp1", "ddp-dp2", "zero3-dp2"):
        shutil.copytree(SWEEP / run, root / run)
    for job, trace in [("ddp_w2", "nccl_ddp_w2_rank0.json.gz"),
                       ("w8", "nccl_w8_rank3_step1010.json.gz"),
                       ("no_comm", "single_gpu_no_comm_step6.json.gz")]:  # fmt: skip
        (root / job).mkdir()
        shutil.copy(REAL / trace, root / job / trace)
    return root


@pytest.mark.parametrize(
    "args",
    [
        ("analyze", "{root}"),
        ("analyze", "{root}/ddp-dp2", "--per-rank"),
        ("collectives", "{root}"),
        ("ranks", "{root}"),
        ("compare", "{root}"),
        ("critical-path", "{root}/ddp-dp2"),
        ("diff", "{root}/ddp-dp1", "{root}/ddp-dp2"),
        ("diff", "{root}/ddp_w2", "{root}/w8"),
    ],
    ids=lambda a: " ".join(a).replace("{root}/", "").replace("{root}", "ALL"),
)
@pytest.mark.cli
def test_text_outputs_say_counts_and_unknowns_plainly(jobs, args):
    done = traceview(*(a.format(root=jobs) for a in args))
    assert done.code in (0, 1), done.err
    plain(done.out, " ".join(args))
    plain(done.err, " ".join(args))


@pytest.mark.cli
def test_the_report_says_counts_and_unknowns_plainly(jobs, tmp_path):
    out = tmp_path / "report.html"
    done = traceview("report", jobs, "-o", out)
    assert done.code in (0, 1), done.err
    text = re.sub(r"<script.*?</script>|<style.*?</style>", "", out.read_text(), flags=re.S)
    words = re.sub(r"<[^>]+>", "\n", text)
    plain(words, "report")
