"""Progress on stderr for long work: only where a person is watching (a terminal)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Protocol, TextIO

from traceview.cli.say import say
from traceview.loader.parallel import Failure

WAIT_BEFORE_SAYING_S = 1.0


class _Traced(Protocol):
    """What finished: a rank's report, or a partition written from its trace."""

    @property
    def trace(self) -> Path: ...


class Progress:
    def __init__(self, enabled: bool | None = None, stream: TextIO = sys.stderr) -> None:
        self.stream = stream
        self.enabled = stream.isatty() if enabled is None else enabled
        self._started = time.monotonic()
        self._last = 0.0
        self._shown = 0  # characters on the progress line now
        self._failed = 0
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
        self._write(f"reading trace: {text}")

    def clear_line(self) -> None:
        """Once the work is done: leave the line clean for the output."""
        if self.enabled and self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
            self._shown = 0

    def file_done(self, done: int, total: int, outcome: _Traced | Failure) -> None:
        """A trace of many finished: one line of counts, rewritten (one trace alone shows its
        bytes instead)."""
        if isinstance(outcome, Failure):
            self._failed += 1
        if not self.enabled or total < 2:
            return
        now = time.monotonic()
        if done < total and now - self._last < 0.2:
            return
        self._last = now
        failed = f", {self._failed} failed" if self._failed else ""
        self._write(f"{done:,} of {total:,} traces{failed} ({now - self._started:.1f} s)")

    def _write(self, text: str) -> None:
        self.stream.write("\r" + text.ljust(self._shown))
        self.stream.flush()
        self._shown = max(self._shown, len(text))
