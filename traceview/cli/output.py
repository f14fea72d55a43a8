"""Write command output: to stdout, or to a file that is replaced whole or not at all.

A file replaced keeps its permissions; a symlink is followed (the file it points to is
replaced, the link stays); a special file — /dev/null, a FIFO, a terminal — is written in place,
as renaming over it would replace the device itself. The temporary file is removed on any
failure, Ctrl-C or SIGTERM (cli/__init__.py turns SIGTERM into an interrupt).
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from traceview.errors import CannotWrite, TraceviewError
from traceview.remote import is_remote, local_only


def refuse_inputs(output: str | None, inputs: Iterable[Path], trees: Iterable[Path] = ()) -> None:
    """--output naming one of the files read, or any path inside a folder read whole (a trace
    store), would destroy what it names: refused before any work."""
    if output is None or output == "-":
        return
    local_only(output, "--output is written on a file system", "write it here and copy it")
    inputs = [p for p in inputs if not is_remote(p)]  # (a local file cannot be one of those)
    trees = [t for t in trees if not is_remote(t)]
    target = Path(output)
    where = _resolved(target)
    for tree in trees:
        if where is not None and where.is_relative_to(tree.resolve()):
            raise TraceviewError(
                f"{output}: --output lies inside {tree}, which is read as input; write elsewhere"
            )
    if not target.exists():
        return
    for path in inputs:
        try:
            same = path.exists() and os.path.samefile(path, target)
        except OSError:
            same = False
        if same:
            raise TraceviewError(f"{output}: --output names one of the inputs; write elsewhere")


def _resolved(target: Path) -> Path | None:
    """Where `target` would be written (its links followed), or None when that cannot be told."""
    try:
        return target.resolve()
    except (OSError, RuntimeError):
        return None


@contextmanager
def replacing(path: str | Path) -> Iterator[BinaryIO]:
    """A binary file that replaces `path` when the block succeeds (written under a hidden
    temporary name beside it, then renamed)."""
    target = Path(path)
    if target.is_symlink():
        target = target.resolve()  # write the file the link points to; the link stays
    if target.is_dir():
        raise TraceviewError(f"{path}: is a folder; --output needs a file name")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise TraceviewError(f"{folder}: no such folder for --output")
    try:
        if target.exists() and not target.is_file():
            with target.open("wb") as f:
                yield f
            return
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else _default_mode()
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
            os.chmod(tmp, mode)  # mkstemp makes it private
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        raise CannotWrite(path, e.strerror or str(e)) from None


def _default_mode() -> int:
    """What a new file gets under the user's umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_output(text: str, path: str | None) -> None:
    if path is None or path == "-":
        _to_stdout(text)
        return
    with replacing(path) as f:
        f.write(text.encode("utf-8"))


def _to_stdout(text: str) -> None:
    stream = sys.stdout
    if stream is None:
        raise TraceviewError("standard output is closed: write to a file with --output FILE")
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        # The interpreter flushes stdout again on exit: point it at /dev/null first.
        with suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        raise TraceviewError(f"cannot write to standard output ({reason})") from None
