"""Uncompressed bytes of a trace, in bounded chunks, whether plain or gzip, from a file or a
stream (`-` for standard input, a pipe, `<(…)`): opened once, never seeked, gzip told by its
magic bytes. A plain file may instead be memory-mapped (for the compiled scanner, which reads it
in place, with no copy): the same chunks, as views of the file."""

from __future__ import annotations

import contextlib
import io
import itertools
import mmap
import re
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from traceview import compression
from traceview.errors import TraceviewError, unreadable
from traceview.inputs import STDIN, ProgressFn, is_stream
from traceview.parse.ahead import made_ahead

GZIP_MAGIC = b"\x1f\x8b"
READ_SIZE = 4 << 20  # compressed or plain bytes read per system call
CHUNK_SIZE = 4 << 20  # uncompressed bytes handed on at once (bounds memory)
INFLATE_STEP = 256 << 10  # compressed bytes fed at once: where a corrupt stream is reported
_LET_GO = getattr(mmap, "MADV_DONTNEED", None)  # where the platform has it


class Mapped(msgspec.Struct, frozen=True):
    """A chunk of a plain file read through a memory map: no copy is made. `view` is the whole
    file; this chunk's bytes end at `end` (they follow the previous chunk's)."""

    view: memoryview
    end: int


# A chunk of the input. A memoryview is valid only until the next chunk is asked for: a plain
# file is read into one buffer over and over, so its memory is reused, not fresh for each chunk.
Chunk = bytes | memoryview | Mapped


INFLATE_AHEAD = 2  # inflated chunks ready before the reader asks (bounds memory)


class ByteSource:
    """Reads one input. After iteration: `cut_short` (a gzip stream ended early),
    `trailing_bytes` (non-gzip bytes after the end of the compressed stream, ignored),
    `zero_tail` (zero bytes that end the trace's bytes, not handed on: a crash while a file is
    written can leave its last blocks so, and those stand in for bytes never written)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stream = is_stream(path)
        self.size_on_disk = 0  # unknown for a stream
        if not self.stream:
            if path.is_dir():
                raise TraceviewError(f"{path}: is a folder, expected a trace file")
            try:
                self.size_on_disk = path.stat().st_size
            except OSError as e:
                raise unreadable(path, e) from None
        self.compressed = False
        self.cut_short = False
        self.trailing_bytes = 0
        self.zero_tail = 0
        self.uncompressed_bytes = 0

    def chunks(
        self, progress: ProgressFn | None = None, *, mapped: bool = False
    ) -> Iterator[Chunk]:
        """`mapped`: a plain file (not a stream) comes as Mapped chunks, cut where read ones
        would be."""
        with self._open() as f:
            # A file to be mapped is read no further than its magic bytes here (copying a read's
            # worth only to map it would cost a small trace a tenth of its reading).
            peek = mapped and not self.stream
            first = self._read(f, len(GZIP_MAGIC) if peek else None)
            self.compressed = first[:2] == GZIP_MAGIC
            if peek and not self.compressed and first:
                mapping = _map(f)
                if mapping is not None:
                    yield from self._mapped(mapping, 0, CHUNK_SIZE, progress)
                    self._refuse_only_zeros()
                    return
            if peek:  # read on: the first read as long as any other
                first += self._read(f, READ_SIZE - len(first))
            if self.compressed:  # inflated on a thread of its own, beside the scanning
                chunks: Iterator[bytes | memoryview] = made_ahead(
                    self._gunzip(f, first, progress), INFLATE_AHEAD, "traceview-inflate"
                )
            else:
                chunks = self._plain(f, first, progress)
            zeros = _HeldZeros(chunks)
            for chunk in zeros:
                self.uncompressed_bytes += len(chunk)
                yield chunk
            self.zero_tail += zeros.held
        self._refuse_only_zeros()

    def chunks_from(
        self,
        start: int,
        aligned: int,
        progress: ProgressFn | None = None,
        *,
        mapped: bool = False,
    ) -> Iterator[Chunk]:
        """A plain file's bytes from `start`: the first chunk runs to `aligned` + CHUNK_SIZE,
        where chunks() ends one too (`aligned` is a multiple of CHUNK_SIZE), the next ones as
        chunks() cuts them."""
        with self._open() as f:
            mapping = _map(f) if mapped else None
            if mapping is not None:
                yield from self._mapped(mapping, start, aligned + CHUNK_SIZE, progress)
                return
            f.seek(start)
            first = f.read(aligned + CHUNK_SIZE - start)  # one piece, as the whole file's buffer
            rest = self._plain(f, self._read(f), progress, consumed=start + len(first))
            zeros = _HeldZeros(itertools.chain([first], rest))
            for chunk in zeros:
                self.uncompressed_bytes += len(chunk)
                yield chunk
            self.zero_tail = zeros.held

    def _refuse_only_zeros(self) -> None:
        if self.zero_tail and not self.uncompressed_bytes:
            raise TraceviewError(
                f"{self.path}: holds only zero bytes ({self.zero_tail:,}): nothing of a trace "
                "was written to it"
            )

    def _open(self) -> io.BufferedIOBase:
        if str(self.path) == STDIN:
            if sys.stdin is None or sys.stdin.isatty():
                raise TraceviewError("-: standard input is a terminal; pipe a trace in")
            return _Borrowed(sys.stdin.buffer)  # type: ignore[return-value, arg-type]
        try:
            f = self.path.open("rb")
        except OSError as e:
            raise unreadable(self.path, e) from None
        if self.stream and f.isatty():
            f.close()
            raise TraceviewError(f"{self.path}: a terminal; pipe a trace in")
        return f

    def _read(self, f: io.BufferedIOBase, size: int | None = None) -> bytes:
        try:
            return f.read(READ_SIZE if size is None else size)
        except OSError as e:
            raise unreadable(self.path, e) from None

    def _plain(
        self, f: io.BufferedIOBase, first: bytes, progress: ProgressFn | None, consumed: int = 0
    ) -> Iterator[bytes | memoryview]:
        buffer = bytearray(READ_SIZE)
        view = memoryview(buffer)
        block: bytes | memoryview = first
        while block:
            consumed += len(block)
            if progress:
                progress(consumed, self.size_on_disk)
            for i in range(0, len(block), CHUNK_SIZE):
                yield block[i : i + CHUNK_SIZE]
            try:
                block = view[: f.readinto(buffer)]
            except OSError as e:
                raise unreadable(self.path, e) from None

    def _mapped(
        self, mapping: mmap.mmap, start: int, first_end: int, progress: ProgressFn | None
    ) -> Iterator[Mapped]:
        """Chunks ending at `first_end`, then every CHUNK_SIZE. The pages before the chunk last
        handed on are let go as it goes (read again from the page cache if asked for again), so
        the mapping holds no more of the file in memory than reading it would."""
        size = len(mapping) - _mapped_zero_tail(mapping)
        self.zero_tail = len(mapping) - size
        if size <= start:
            mapping.close()
            return
        view = memoryview(mapping)
        behind = start // mmap.PAGESIZE * mmap.PAGESIZE  # pages up to here were let go
        end, previous = min(first_end, size), start
        try:
            while previous < size:
                self.uncompressed_bytes += end - previous
                if progress:
                    progress(end, size)
                yield Mapped(view, end)
                let_go = previous // mmap.PAGESIZE * mmap.PAGESIZE
                if let_go > behind and _LET_GO is not None:
                    mapping.madvise(_LET_GO, behind, let_go - behind)
                    behind = let_go
                previous, end = end, min(end + CHUNK_SIZE, size)
        finally:
            view.release()
            with contextlib.suppress(BufferError):  # a reader's view: unmapped when it goes
                mapping.close()

    def _gunzip(
        self, f: io.BufferedIOBase, block: bytes, progress: ProgressFn | None
    ) -> Iterator[bytes]:
        inflater = _inflater()
        in_member = False  # fed bytes to `inflater` that have not reached a member's end yet
        consumed = 0  # compressed bytes read before `block`
        blocks = _HeldZeros(self._blocks(f, block, progress))
        for block in blocks:
            for at in range(0, len(block), INFLATE_STEP):
                pending = block[at : at + INFLATE_STEP]
                where = consumed + at
                while pending:
                    if not in_member and pending[:2] != GZIP_MAGIC[: len(pending[:2])]:
                        # A whole stream, then bytes that are no gzip member: kept apart.
                        after = max(0, len(block) - at - INFLATE_STEP)
                        self.trailing_bytes += len(pending) + after + blocks.drained()
                        return
                    in_member = True
                    try:
                        out = inflater.decompress(pending, CHUNK_SIZE)
                    except compression.INFLATE_ERRORS as e:
                        raise TraceviewError(self._corrupt(e, where, len(pending))) from None
                    if out:
                        yield out
                    if inflater.eof:
                        # Another gzip member may follow: concatenated .gz files are valid gzip.
                        in_member = False
                        used = len(pending) - len(inflater.unused_data)
                        where += used
                        pending = inflater.unused_data
                        inflater = _inflater()
                    else:
                        pending = inflater.unconsumed_tail
            consumed += len(block)
        held = blocks.held
        if in_member and held:
            try:
                last = _ended_by_zeros(inflater, held)
            except compression.INFLATE_ERRORS as e:
                fed = min(held, _MEMBER_END_ZEROS)
                raise TraceviewError(self._corrupt(e, consumed, fed)) from None
            if last is None:  # cut short, then zero-filled
                self.cut_short = True
            else:  # the zeros began with the member's last bytes (its length, say): whole
                out, held = last
                if out:
                    yield out
        elif in_member:
            if tail := inflater.flush():
                yield tail
            self.cut_short = not inflater.eof
        self.zero_tail += held

    def _blocks(
        self, f: io.BufferedIOBase, block: bytes, progress: ProgressFn | None
    ) -> Iterator[bytes]:
        """The compressed input, read on from `block`, its progress said as it goes."""
        consumed = 0
        while block:
            yield block
            consumed += len(block)
            if progress:
                progress(consumed, self.size_on_disk)
            block = self._read(f)

    def _corrupt(self, error: Exception, where: int, length: int) -> str:
        reason = _ERROR_CODE.sub("", str(error))
        if _fails_its_check(error):  # the CRC or length at the end: the damage may be anywhere
            return (
                f"{self.path}: corrupt gzip data: its check (CRC or length) fails at the end of "
                f"its stream (compressed byte {where + length:,}); the damage is somewhere "
                "before it"
            )
        return (
            f"{self.path}: corrupt gzip data ({reason}), found in compressed bytes {where:,}–"
            f"{where + length:,}"
        )


# zlib's "Error -3 while decompressing data: invalid block type", ISA-L's "Error -1 Invalid
# deflate block found": the words kept, the code dropped.
_ERROR_CODE = re.compile(r"^Error -?\d+ (while decompressing data: )?")


def _inflater() -> zlib._Decompress:  # ISA-L's has the same methods
    """A gzip member's inflater (16 + MAX_WBITS: the gzip header and trailer, not raw deflate)."""
    inflating = compression.inflating
    decompressor: zlib._Decompress = inflating.decompressobj(16 + inflating.MAX_WBITS)
    return decompressor


class _HeldZeros:
    """The chunks of an input less the zero bytes that end it, counted in `held` once all are
    read: a crash while a file is written can leave its last blocks zero-filled. Zeros that more
    bytes follow are handed on before them, in pieces no longer than CHUNK_SIZE."""

    def __init__(self, chunks: Iterator[Any]) -> None:
        self._chunks = chunks
        self.held = 0

    def __iter__(self) -> Iterator[Any]:
        for chunk in self._chunks:
            data = len(chunk) - _zeros_at_end(chunk)
            if data == 0:
                self.held += len(chunk)
                continue
            while self.held:
                zeros = min(self.held, CHUNK_SIZE)
                yield bytes(zeros)
                self.held -= zeros
            yield chunk if data == len(chunk) else chunk[:data]
            self.held = len(chunk) - data

    def drained(self) -> int:
        """The bytes not handed on: the zeros held and every chunk not yet read."""
        return self.held + sum(len(chunk) for chunk in self._chunks)


# Zeros a gzip member's own last bytes may end in: the last deflate byte, its CRC and length.
_MEMBER_END_ZEROS = 9


def _ended_by_zeros(inflater: zlib._Decompress, held: int) -> tuple[bytes, int] | None:
    """Whether the `held` zeros that end a gzip file end its last member (`inflater`, fed all
    the bytes before them): the output they give and how many zeros follow the member; None
    where they do not (the member was cut short, and zeros fill the rest). The inflater is of no
    use after a None: zeros fed to a cut member inflate to garbage, dropped here (what the bytes
    before them give has all been had: its output is not held back). A member they end whose
    check fails is damaged: that error is raised."""
    fed = min(held, _MEMBER_END_ZEROS)
    try:
        out = inflater.decompress(bytes(fed))
    except compression.INFLATE_ERRORS as e:
        if _fails_its_check(e):  # the member ended, and its data is damaged: said so
            raise
        return None
    return (out, held - fed + len(inflater.unused_data)) if inflater.eof else None


def _fails_its_check(error: Exception) -> bool:
    """Whether an inflater's error is the CRC or length at a member's end not matching."""
    return "check" in str(error).lower()


def _zeros_at_end(chunk: bytes | memoryview) -> int:
    """How many zero bytes end the chunk (the last byte alone is looked at where it is not)."""
    if not chunk or chunk[-1] != 0:
        return 0
    return len(chunk) - len(bytes(chunk).rstrip(b"\0"))


_ZERO_LOOK = 1 << 20  # a mapped file's zero tail is looked for this many bytes at a time


def _mapped_zero_tail(mapping: mmap.mmap) -> int:
    """How many zero bytes end the mapped file."""
    end = len(mapping)
    while end and mapping[end - 1] == 0:
        start = max(0, end - _ZERO_LOOK)
        end = start + len(mapping[start:end].rstrip(b"\0"))
        if end > start:
            break
    return len(mapping) - end


def _map(f: io.BufferedIOBase) -> mmap.mmap | None:
    """The whole file mapped for reading, or None where it cannot be (a file system without
    memory maps, an empty file): it is then read."""
    try:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None


class _Borrowed:
    """Standard input as a context manager that does not close it."""

    def __init__(self, f: io.BufferedIOBase) -> None:
        self._f = f

    def __enter__(self) -> io.BufferedIOBase:
        return self._f

    def __exit__(self, *_: object) -> None:
        return None
