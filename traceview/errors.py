"""The one error type the library raises for bad input, and the notes it attaches to results."""

from __future__ import annotations

from typing import Literal

import msgspec

# Exit codes shared by every command (docs/errors.md): 0 clean, 1 results
# written but some input was lost or skipped (see the notes), 2 bad input or usage, 3 an internal
# error (a bug), 4 `diff --fail-if-slower`: run B slower beyond the noise, 130 interrupted.
EXIT_OK = 0
EXIT_DATA_LOSS = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_SLOWER = 4
EXIT_INTERRUPTED = 130


# How a bug is named wherever one is reported; the CLI adds where to see its traceback.
A_BUG = "(a bug in traceview)"
A_BUG_DEBUG = "(a bug in traceview; --debug shows where)"


def one_line(text: str) -> str:
    """`text` with its control characters escaped (a file name may hold a newline)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class TraceviewError(Exception):
    """Bad input or an impossible request; the CLI prints `message` on one line and exits."""

    def __init__(self, message: str, exit_code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class NotATraceError(TraceviewError):
    """Valid JSON that is not a profiler trace: in a folder, such files are skipped."""


class CannotWrite(TraceviewError):
    """A file or folder could not be written (a full disk, a read-only file system): `reason`
    is the system's word for it."""

    def __init__(self, path: object, reason: str) -> None:
        super().__init__(f"{path}: cannot write ({reason})")
        self.reason = reason


def unreadable(path: object, error: OSError) -> TraceviewError:
    """The one message for a file the operating system would not let us read."""
    if isinstance(error, FileNotFoundError):
        return TraceviewError(f"{path}: no such file")
    if isinstance(error, PermissionError):
        return TraceviewError(f"{path}: permission denied")
    return TraceviewError(f"{path}: cannot read ({error.strerror or error})")


class Note(msgspec.Struct, frozen=True, kw_only=True):
    """Something the reader of a result must know. `lossy`: input was dropped; `caveat`: a
    figure in the result may mislead (every output format carries these)."""

    message: str
    severity: Literal["info", "lossy", "caveat"] = "info"

    @property
    def lossy(self) -> bool:
        return self.severity == "lossy"

    @property
    def caveat(self) -> bool:
        return self.severity == "caveat"
