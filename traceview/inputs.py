"""What every part of traceview reads: paths (standard input among them) and the progress of
reading one."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path, PurePath

STDIN = "-"

ProgressFn = Callable[[int, int], None]  # (bytes of the input consumed, its size; 0 unknown)


def is_stream(path: Path) -> bool:
    """Standard input, a pipe, a character device: read as it comes, with no size."""
    if str(path) == STDIN:
        return True
    if not isinstance(path, PurePath):  # object storage: no pipes there, and a stat is a request
        return False
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)
