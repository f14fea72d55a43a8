"""Build large realistic traces by tiling a real one: the events' own text is repeated with
timestamps shifted past the previous copy, and ids (correlation, External id, flow id,
ProfilerStep#N) offset so every link stays unique. The profiler's formatting is kept as is.

A tiling that would span more than MAX_SPAN_US (a source of long steps and few bytes, tiled to
a GB) has its source's times and durations divided first, as if run on a faster machine: a
profile spans minutes to hours, and traceview skips events a day from the others as corrupt."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

_ARRAY = re.compile(rb'"traceEvents"\s*:\s*\[')
_ARRAY_END = re.compile(rb"\}\s*\]")
_TS = re.compile(rb'"ts": (\d+)')
_IDS = re.compile(rb'"(correlation|External id|external id|id)": (\d+)')
_STEP = re.compile(rb"ProfilerStep#(\d+)")
_RANK = re.compile(rb'("distributedInfo": \{[^}]*?"rank": )(\d+)')


def _split(text: bytes) -> tuple[bytes, bytes, bytes]:
    start = _ARRAY.search(text)
    if start is None:
        raise SystemExit("the source is not a trace with a traceEvents array")
    end = list(_ARRAY_END.finditer(text))[-1]
    return text[: start.end()], text[start.end() : end.start() + 1], text[end.start() + 1 :]


def _span_us(events: bytes) -> int:
    ts = [int(m[1]) for m in _TS.finditer(events)]
    return max(ts) - min(ts) + 1000


MAX_SPAN_US = 20 * 3600 * 10**6
_TIME = re.compile(rb'"(ts|dur)": (\d+)(?:\.(\d+))?')


def _time_scaled(events: bytes, factor: int) -> bytes:
    """Every ts (from the first) and dur divided by `factor`, to the nanosecond."""
    first = min(int(m[1]) for m in _TS.finditer(events)) * 1000

    def scaled(m: re.Match[bytes]) -> bytes:
        ns = int(m[2]) * 1000 + int((m[3] or b"0")[:3].ljust(3, b"0"))
        ns = (first + (ns - first) // factor) if m[1] == b"ts" else ns // factor
        return b'"%s": %d.%03d' % (m[1], ns // 1000, ns % 1000)

    return _TIME.sub(scaled, events)


def _shifted(events: bytes, ts_us: int, ids: int, steps: int) -> bytes:
    events = _TS.sub(lambda m: b'"ts": %d' % (int(m[1]) + ts_us), events)
    events = _IDS.sub(lambda m: b'"%s": %d' % (m[1], int(m[2]) + ids), events)
    return _STEP.sub(lambda m: b"ProfilerStep#%d" % (int(m[1]) + steps), events)


def _top_level(events: bytes) -> list[bytes]:
    """The event objects of the array's text, each as written."""
    out, depth, start, quoted, escaped = [], 0, 0, False, False
    for i, c in enumerate(events):
        if quoted:
            quoted, escaped = (not (c == 0x22 and not escaped)), (c == 0x5C and not escaped)
        elif c == 0x22:
            quoted = True
        elif c == 0x7B:
            start = i if depth == 0 else start
            depth += 1
        elif c == 0x7D:
            depth -= 1
            if depth == 0:
                out.append(events[start : i + 1])
    return out


def _once_per_trace(event: bytes) -> bool:
    """What a profiler writes once per trace, not once per stretch of time: process and thread
    names (metadata), the trace's global instants ("Iteration Start", "Record Window End") and
    the profiler's own span of the window ("PyTorch Profiler (0)", category "Trace")."""
    return (
        b'"ph": "M"' in event
        or (b'"ph": "i"' in event and b'"s": "g"' in event)
        or b'"cat": "Trace"' in event
    )


def tile(source: Path, target: Path, size_bytes: int, rank: int | None = None) -> int:
    """Write `target` (uncompressed JSON, or gzip if it ends in .gz) of about size_bytes: the
    source's events, then copies of them without what a trace holds once."""
    raw = source.read_bytes()
    text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    head, events, tail = _split(text)
    repeated = b",\n  ".join(e for e in _top_level(events) if not _once_per_trace(e))
    if rank is not None:
        head = _RANK.sub(lambda m: m[1] + str(rank).encode(), head, count=1)
    span = _span_us(events) * (size_bytes // len(repeated) + 1)
    if span > MAX_SPAN_US:
        factor = -(-span // MAX_SPAN_US)
        events, repeated = _time_scaled(events, factor), _time_scaled(repeated, factor)
    shift = _span_us(events)
    id_offset = max(int(m[2]) for m in _IDS.finditer(events)) + 1
    steps = [int(m[1]) for m in _STEP.finditer(events)]
    step_offset = (max(steps) - min(steps) + 1) if steps else 0
    opener = gzip.open if target.name.endswith(".gz") else open
    written = 0
    with opener(target, "wb") as out:  # type: ignore[operator]
        out.write(head)
        written += len(head)
        copy = 0
        while written < size_bytes or copy == 0:
            chunk = events
            if copy:
                chunk = _shifted(repeated, copy * shift, copy * id_offset, copy * step_offset)
                out.write(b",")
            out.write(chunk)
            written += len(chunk) + 1
            copy += 1
        out.write(tail)
    return written + len(tail)


EPOCH_US = 1_600_000_000_000_000  # 2020 in microseconds: past float64's exact nanoseconds
_EPOCH_TS = re.compile(rb'"ts": (\d+)(\.\d+)?')


def epoch_copies(source: Path, out: Path) -> tuple[Path, Path]:
    """The trace with every ts moved to the epoch: once with its fractions, once without."""
    text = source.read_bytes()
    frac, whole = out / f"{source.stem}.epoch_frac.json", out / f"{source.stem}.epoch_int.json"
    if not frac.exists():
        frac.write_bytes(
            _EPOCH_TS.sub(lambda m: b'"ts": %d%s' % (int(m[1]) + EPOCH_US, m[2] or b".500"), text)
        )
    if not whole.exists():
        whole.write_bytes(_EPOCH_TS.sub(lambda m: b'"ts": %d' % (int(m[1]) + EPOCH_US), text))
    return frac, whole


if __name__ == "__main__":  # run by the benchmarks, so that they stay small themselves
    import sys

    if sys.argv[1] == "--epoch":  # tile.py --epoch BASE OUT
        epoch_copies(Path(sys.argv[2]), Path(sys.argv[3]))
    else:  # tile.py SOURCE TARGET BYTES
        tile(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
