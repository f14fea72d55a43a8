"""gzip by ISA-L (the `isal` package) where its wheel exists, by zlib elsewhere: ISA-L inflates
about three times and deflates (at its level 2) about four times as fast as zlib, and lets go of
the GIL as zlib does. The one place that chooses."""

from __future__ import annotations

import gzip
import importlib
import types
import zlib
from typing import BinaryIO


def _module(name: str, fallback: types.ModuleType) -> types.ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - every platform CI runs on has the wheel
        return fallback


inflating = _module("isal.isal_zlib", zlib)  # zlib's decompressobj, MAX_WBITS, error
_deflating = _module("isal.igzip", gzip)  # gzip's GzipFile
INFLATE_ERRORS: tuple[type[Exception], ...] = (inflating.error, zlib.error)
# Each library's level as fast as its level 1 and within 5 % of its size (a timeline is written
# once and opened once: zlib's 6 takes twice as long for a quarter less).
_WRITE_LEVEL = 2 if _deflating is not gzip else 3


def gzip_writer(sink: BinaryIO) -> gzip.GzipFile:
    """A file object that writes gzip to `sink` (closing it finishes the stream, not `sink`)."""
    writer: gzip.GzipFile = _deflating.GzipFile(fileobj=sink, mode="wb", compresslevel=_WRITE_LEVEL)
    return writer
