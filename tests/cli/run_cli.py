"""Run `traceview` as users do: a real process, its exit code, stdout and stderr."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Result:
    code: int
    out: str
    err: str


def traceview(*args: str | Path, cwd: Path | None = None) -> Result:
    proc = subprocess.run(
        [sys.executable, "-m", "traceview", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)
