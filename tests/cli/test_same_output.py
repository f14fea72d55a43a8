"""The same input gives the same output, byte for byte, every run: each command twice, on the
sample sweep, on real traces, and on a run set against itself (every change 0: rows whose sort
keys all tie)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.run_cli import Result, traceview

ROOT = Path(__file__).parents[2]
SWEEP = ROOT / "sample_traces" / "cpu_sweep"
REAL = ROOT / "tests" / "fixtures" / "traces"

COMMANDS = {
    "analyze": ("analyze", SWEEP, "--format", "json"),
    "analyze table": ("analyze", SWEEP),
    "analyze csv": ("analyze", SWEEP, "--format", "csv"),
    "collectives": ("collectives", SWEEP / "ddp-dp2", REAL / "nccl_w8_rank3_step1010.json.gz",
                    "--format", "json"),
    "ranks": ("ranks", SWEEP, "--format", "json"),
    "compare": ("compare", SWEEP, "--format", "json"),
    "critical-path": ("critical-path", SWEEP / "ddp-dp4", "--format", "json"),
    "diff": ("diff", SWEEP / "ddp-dp1", SWEEP / "ddp-dp2", "--format", "json"),
    "diff of a run with itself": ("diff", SWEEP / "zero3-dp2", SWEEP / "zero3-dp2"),
    "export": ("export", SWEEP / "ddp-dp2"),
}  # fmt: skip


def twice(*args: str | Path) -> tuple[Result, Result]:
    return traceview(*args), traceview(*args)


@pytest.mark.cli
@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_twice_gives_the_same_bytes(name):
    first, second = twice(*COMMANDS[name])
    assert first.code == 0, first.err
    assert first.out == second.out and first.err == second.err


@pytest.mark.cli
def test_the_report_twice_is_the_same_file(tmp_path):
    # The report's stamp is now's, unless SOURCE_DATE_EPOCH fixes it (reproducible builds).
    files = [tmp_path / "a.html", tmp_path / "b.html"]
    for out in files:
        done = traceview("report", SWEEP / "ddp-dp1", SWEEP / "ddp-dp2", "-o", out,
                         env={"SOURCE_DATE_EPOCH": "1700000000"})  # fmt: skip
        assert done.code == 0, done.err
    assert files[0].read_bytes() == files[1].read_bytes()
    assert "2023-11-14 22:13 UTC" in files[0].read_text()
