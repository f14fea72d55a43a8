"""The compiled scanner on several threads at once, as the parser runs it (parse/halves.py): each
thread its own Scanner over one shared memory-mapped trace, with the GIL released while they
scan, and page-guarded copies beside them. Run by scripts/sanitize.sh under ThreadSanitizer, which
cannot load polars: so this loads the extension alone, not the traceview package.

Checks too that the threads together find exactly the events one thread finds.
"""

from __future__ import annotations

import importlib.util
import json
import mmap
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

ROUNDS = 20
EVENTS = 20_000
CHUNK = 256 << 10


def load_scanner() -> ModuleType:
    folder = Path(__file__).resolve().parents[1] / "traceview" / "parse"
    built = sorted(folder.glob("_scan*.so"))
    if not built:
        sys.exit("scan_threads: the compiled scanner is not built (pip install -e .)")
    spec = importlib.util.spec_from_file_location("traceview.parse._scan", built[0])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def trace_text() -> bytes:
    events = [
        {
            "ph": "X",
            "name": f"op{i % 97}",
            "cat": "kernel" if i % 3 else "cpu_op",
            "pid": i % 4,
            "tid": 7,
            "ts": 1000 + i,
            "dur": 1.5,
            "args": {
                "External id": i,
                "device": 0,
                "stream": 7,
                "Input Dims": [[i % 5]],
                "grid": [i % 7, 1, 1],
            },
        }
        for i in range(EVENTS)
    ]
    return json.dumps({"traceEvents": events}).encode()


def rows_from(scan: ModuleType, view: memoryview, start: int, end: int) -> int:
    """Events one Scanner finds from `start`, reading chunks until it passes `end`."""
    scanner = scan.Scanner(
        b"MX",
        [
            (b"External id", scan.ARG_CORRELATION, -1, 0),
            (b"device", scan.ARG_DEVICE, -1, 0),
            (b"stream", scan.ARG_STREAM, -1, 0),
            (b"Input Dims", scan.ARG_RAW, 0, 0),  # kept: its values interned, as a call's are
            (b"grid", scan.ARG_RAW, 1, 1),  # kept for every event, as a launch shape is
        ],
    )
    rows, pos = 0, start
    while pos < end:
        found = scanner.scan(view[: min(len(view), pos + CHUNK)], pos)
        if found.status != scan.BATCH:
            break
        rows += len(found.columns) // (8 * len(scan.COLUMNS))
        pos = found.next
    return rows


def one_round(scan: ModuleType, view: memoryview, first: int, middle: int) -> tuple[int, int, int]:
    """Both halves scanned and the whole file copied, on three threads at once."""
    with ThreadPoolExecutor(3) as threads:
        a = threads.submit(rows_from, scan, view, first, middle)
        b = threads.submit(rows_from, scan, view, middle, len(view))
        c = threads.submit(lambda: len(scan.copy(view)))
        return a.result(), b.result(), c.result()


def main() -> int:
    scan = load_scanner()
    text = trace_text()
    first = text.index(b"[") + 1
    middle = text.index(b'{"ph"', len(text) // 2)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        path.write_bytes(text)
        with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            view = memoryview(mapped)
            alone = rows_from(scan, view, first, len(text))
            rounds = [one_round(scan, view, first, middle) for _ in range(ROUNDS)]
            view.release()
    for a, b, copied in rounds:
        # The first half's reader stops at the first boundary past the middle.
        if copied != len(text) or b > alone or a + b < alone:
            print(f"scan_threads: threads found {a} + {b} (copied {copied}), one thread {alone}")
            return 1
    print(f"scan_threads: {ROUNDS} rounds of 3 threads, {alone:,} events, agreed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
