"""The one way the command line speaks on stderr: `traceview: <what>: <message>`, one line."""

from __future__ import annotations

import contextlib
import sys

from traceview.errors import one_line


def say(what: str, message: str = "") -> None:
    text = f"traceview: {what}: {message}" if message else f"traceview: {what}"
    with contextlib.suppress(OSError, ValueError, AttributeError):  # stderr closed: nowhere to say
        print(one_line(text), file=sys.stderr, flush=True)
