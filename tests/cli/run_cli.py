"""Run `traceview` as users do: a real process, its exit code, stdout and stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Result:
    code: int
    out: str
    err: str


def traceview(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> Result:
    """`env`: variables set for this run, over the test's own environment."""
    proc = subprocess.run(
        [sys.executable, "-m", "traceview", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env={**os.environ, **env} if env else None,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def traceview_started(*args: str | Path) -> subprocess.Popen[str]:
    """`traceview` started as users start it, not waited for (its output piped)."""
    return subprocess.Popen(
        [sys.executable, "-m", "traceview", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
