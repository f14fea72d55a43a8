"""Items made on a thread of their own, a few ahead of their reader: a gzipped trace is inflated
so (the inflater lets go of the GIL while it works) while the trace's reader scans what is
inflated and makes its tables."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")
_DONE = object()


def made_ahead(items: Iterator[T], depth: int, name: str) -> Iterator[T]:
    """`items`, made on a thread of their own up to `depth` before they are read. What the
    thread raises is raised here, in its place among the items; a reader that stops early stops
    the thread."""
    ready: queue.Queue[object] = queue.Queue(depth)
    stop = threading.Event()

    def hand_on(item: object) -> bool:
        """False once the reader has stopped (a thread it left behind must not block)."""
        while not stop.is_set():
            with contextlib.suppress(queue.Full):
                ready.put(item, timeout=0.1)
                return True
        return False

    def run() -> None:
        try:
            for item in items:
                if not hand_on(item) or stop.is_set():
                    return
            hand_on(_DONE)
        except BaseException as e:  # the reader's to raise, on its own thread
            hand_on(e)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    try:
        while (item := ready.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]
    finally:
        # The thread is woken where it waits (handing an item on to a full queue) and stops
        # there at once. One still making an item stops once it is made; one blocked reading a
        # pipe that stays open is left (a daemon), not waited for.
        stop.set()
        _emptied(ready)
        thread.join(timeout=2.0)
        _emptied(ready)  # what it handed on while stopping: not held past the reader


def _emptied(ready: queue.Queue[object]) -> None:
    with contextlib.suppress(queue.Empty):
        while True:
            ready.get_nowait()
