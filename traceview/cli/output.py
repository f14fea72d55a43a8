"""Write command output: to stdout, or to a file that is replaced whole or not at all."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from traceview.errors import TraceviewError


@contextmanager
def replacing(path: str | Path) -> Iterator[BinaryIO]:
    """A binary file that replaces `path` when the block succeeds (written under a hidden
    temporary name, then renamed). A special file — /dev/null, a FIFO, a terminal — is written
    in place: renaming over it would replace the device itself."""
    target = Path(path)
    if target.is_dir():
        raise TraceviewError(f"{target}: is a folder; --output needs a file name")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise TraceviewError(f"{folder}: no such folder for --output")
    try:
        if target.exists() and not target.is_file():
            with target.open("wb") as f:
                yield f
            return
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
            os.chmod(tmp, 0o644)  # mkstemp makes it private; output is for everyone to read
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        raise TraceviewError(f"{target}: cannot write ({e.strerror or e})") from None


def write_output(text: str, path: str | None) -> None:
    if path is None or path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    with replacing(path) as f:
        f.write(text.encode("utf-8"))
