"""Progress on stderr for long work: only where a person is watching (a terminal)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from traceview.cli.say import say
from traceview.loader.parallel import Failure, Outcome

WAIT_BEFORE_SAYING_S = 1.0


class Progress:
    def __init__(self, enabled: bool | None = None, stream: TextIO = sys.stderr) -> None:
        self.stream = stream
        self.enabled = stream.isatty() if enabled is None else enabled
        self._started = time.monotonic()
        self._last = 0.0
        self._waiting: threading.Timer | None = None

    def say_if_nothing_arrives(self, streams: list[Path]) -> None:
        """A pipe nobody writes to blocks: not silently. Said once, after a second of nothing."""
        names = ", ".join(str(p) for p in streams)
        self._waiting = threading.Timer(
            WAIT_BEFORE_SAYING_S,
            say,
            ("waiting", f"nothing has arrived yet from {names} (a pipe: is anything writing?)"),
        )
        self._waiting.daemon = True
        self._waiting.start()

    def stop_waiting(self) -> None:
        if self._waiting is not None:
            self._waiting.cancel()
            self._waiting = None

    def bytes_read(self, done: int, total: int) -> None:
        self.stop_waiting()
        now = time.monotonic()
        if not self.enabled or now - self._last < 0.2:
            return
        self._last = now
        if total:
            text = f"{100.0 * done / total:5.1f}% of {total / 1e6:,.0f} MB"
        else:  # a stream: its size is not known
            text = f"{done / 1e6:,.0f} MB"
        self.stream.write(f"\rreading trace: {text}")
        self.stream.flush()

    def clear_line(self) -> None:
        """After a single trace's byte count: leave the line clean for the output."""
        if self.enabled and self._last:
            self.stream.write("\r" + " " * 50 + "\r")
            self.stream.flush()

    def file_done(self, done: int, total: int, outcome: Outcome) -> None:
        """A trace of many finished (one trace alone shows its bytes instead)."""
        if not self.enabled or total < 2:
            return
        elapsed = time.monotonic() - self._started
        name = outcome.path.name if isinstance(outcome, Failure) else outcome.trace.name
        status = "failed" if isinstance(outcome, Failure) else "done"
        self.stream.write(f"\r[{done}/{total}] {name}: {status} ({elapsed:.1f} s){' ' * 20}\n")
        self.stream.flush()
