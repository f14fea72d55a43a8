"""Uncompressed bytes of a trace file, in bounded chunks, whether plain or gzip."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from traceview.errors import TraceviewError

GZIP_MAGIC = b"\x1f\x8b"
READ_SIZE = 4 << 20  # compressed or plain bytes read per system call
CHUNK_SIZE = 4 << 20  # uncompressed bytes handed on at once (bounds memory)

ProgressFn = Callable[[int, int], None]  # (bytes of the file consumed, file size)


class ByteSource:
    """Reads one file. After iteration, `cut_short` tells whether a gzip stream ended early."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            if path.is_dir():
                raise TraceviewError(f"{path}: is a folder, expected a trace file")
            self.size_on_disk = path.stat().st_size
            with path.open("rb") as f:
                head = f.read(2)
        except FileNotFoundError:
            raise TraceviewError(f"{path}: no such file") from None
        except PermissionError:
            raise TraceviewError(f"{path}: permission denied") from None
        except OSError as e:
            raise TraceviewError(f"{path}: cannot read ({e.strerror or e})") from None
        self.compressed = head == GZIP_MAGIC
        self.cut_short = False
        self.uncompressed_bytes = 0

    def chunks(self, progress: ProgressFn | None = None) -> Iterator[bytes]:
        reader = self._gunzip if self.compressed else self._plain
        for chunk in reader(progress):
            self.uncompressed_bytes += len(chunk)
            yield chunk

    def _open(self):
        try:
            return self.path.open("rb")
        except OSError as e:
            raise TraceviewError(f"{self.path}: cannot read ({e.strerror or e})") from None

    def _plain(self, progress: ProgressFn | None) -> Iterator[bytes]:
        with self._open() as f:
            while block := f.read(CHUNK_SIZE):
                if progress:
                    progress(f.tell(), self.size_on_disk)
                yield block

    def _gunzip(self, progress: ProgressFn | None) -> Iterator[bytes]:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        in_member = False  # fed bytes to `inflater` that have not reached a member's end yet
        consumed = 0
        with self._open() as f:
            while block := f.read(READ_SIZE):
                consumed += len(block)
                pending = block
                while pending:
                    in_member = True
                    try:
                        out = inflater.decompress(pending, CHUNK_SIZE)
                    except zlib.error as e:
                        raise TraceviewError(
                            f"{self.path}: corrupt gzip data near compressed byte "
                            f"{consumed:,} ({e})"
                        ) from None
                    if out:
                        yield out
                    if inflater.eof:
                        # Another gzip member may follow: concatenated .gz files are valid gzip.
                        in_member = False
                        pending = inflater.unused_data
                        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    else:
                        pending = inflater.unconsumed_tail
                if progress:
                    progress(consumed, self.size_on_disk)
        if in_member:
            if tail := inflater.flush():
                yield tail
            self.cut_short = not inflater.eof
