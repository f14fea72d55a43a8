# The compiled JSON row writer's interface (traceview/json_rows/_rows.c), for type checkers.
from collections.abc import Sequence

from numpy import ndarray

INT: int
MILLI: int
STRING: int
RAW: int
DICT: int

def rows(
    pieces: tuple[bytes, ...],
    columns: Sequence[tuple[int, ndarray, ndarray | None, str | bytes | None, ndarray | None]],
    start: int,
    stop: int,
    separator: bytes,
) -> bytes: ...
