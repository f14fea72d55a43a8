# The compiled scanner's interface (traceview/parse/_scan.c), for type checkers.
from collections.abc import Sequence
from typing import final

COLUMNS: tuple[str, ...]
NEED_MORE: int
BATCH: int
ODD: int
FAULT: int
ARG_CORRELATION: int
ARG_DEVICE: int
ARG_STREAM: int
ARG_LOOSE: int
ARG_RAW: int
ARG_TEXT_OR_NULL: int

_Buffer = bytes | bytearray | memoryview

@final
class ScanResult:
    status: int
    close: int
    next: int
    columns: bytes
    metadata: bytes
    odd_ids: bytes
    new_names: list[str]
    new_categories: list[str]
    kept_args: bytes
    new_kept: tuple[list[str], ...]
    first_ts: int | None
    any_fraction: bool
    big_fraction_ts: bool
    big_fraction_dur: bool
    rounded: bool
    ended: bool

@final
class Scanner:
    def __init__(self, phases: bytes, keys: Sequence[tuple[bytes, int, int, int]], /) -> None: ...
    def scan(self, buf: _Buffer, pos: int, /) -> ScanResult: ...
    def keep_args(self, flags: bytes, /) -> None: ...

def copy(buf: _Buffer, /) -> bytes | None: ...
