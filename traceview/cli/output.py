"""Write command output: to stdout, or atomically to a file (a failure leaves the old file)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from traceview.errors import TraceviewError


def write_output(text: str, path: str | None) -> None:
    if path is None or path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = Path(path)
    if target.is_dir():
        raise TraceviewError(f"{target}: is a folder; --output needs a file name")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise TraceviewError(f"{folder}: no such folder for --output")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a report is for everyone to read
        os.replace(tmp, target)
    except OSError as e:
        raise TraceviewError(f"{target}: cannot write ({e.strerror or e})") from None
