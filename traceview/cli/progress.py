"""Progress on stderr for long work: only where a person is watching (a terminal)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from traceview.runner import Failure, Outcome


class Progress:
    def __init__(self, enabled: bool | None = None, stream: TextIO = sys.stderr) -> None:
        self.stream = stream
        self.enabled = stream.isatty() if enabled is None else enabled
        self._started = time.monotonic()
        self._last = 0.0

    def bytes_read(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or now - self._last < 0.2:
            return
        self._last = now
        pct = 100.0 * done / total if total else 100.0
        self.stream.write(f"\rreading trace: {pct:5.1f}% of {total / 1e6:,.0f} MB")
        self.stream.flush()

    def file_done(self, done: int, total: int, outcome: Outcome) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self._started
        name = outcome.path.name if isinstance(outcome, Failure) else outcome.trace.name
        status = "failed" if isinstance(outcome, Failure) else "done"
        self.stream.write(f"\r[{done}/{total}] {name}: {status} ({elapsed:.1f} s){' ' * 20}\n")
        self.stream.flush()
