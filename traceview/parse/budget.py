"""How much memory one trace's analysis may take, and the count that holds it to that.

Memory grows with the events a trace holds and the bytes of their distinct names, not with the
file's bytes: a gzip of a few MB can expand to GBs of tiny events, or of long distinct names.
The peak of an analysis (its tables, then the model built from them) stays under BYTES_PER_EVENT
per complete event — about 250 bytes for the smallest events (a trace of two million tiny events
peaked ~500 MB above the interpreter), about half the file's size for real ones
(benchmarks/bench_analyze.py, "Speed and memory") — plus NAME_COPIES times the bytes of its
distinct names (the scanner's table of them, polars' categories, a copy as frames are finished:
20,000 kernels of distinct 20 KB names, 400 MB of names, peaked 870 MB above a trace of the same
events with short names). Both are counted as events are read; a trace that would need more than
the bound is refused in one line, before the memory is taken.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from traceview.errors import TraceviewError

BYTES_PER_EVENT = 256
NAME_COPIES = 3
CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")


def _cgroup_limit_files() -> list[Path]:
    """The memory limits over this process: its own control group's and each enclosing one's
    (a SLURM step, a systemd unit, a container), cgroup v2 and v1, from /proc/self/cgroup."""
    places: list[Path] = []
    try:
        lines = PROC_CGROUP.read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2: one hierarchy
            base, name = CGROUP_ROOT, "memory.max"
        elif "memory" in controllers.split(","):
            base, name = CGROUP_ROOT / "memory", "memory.limit_in_bytes"
        else:
            continue
        group = Path(path.lstrip("/"))
        places += [base / up / name for up in (group, *group.parents)]
    places += [CGROUP_ROOT / "memory.max", CGROUP_ROOT / "memory" / "memory.limit_in_bytes"]
    return places


def machine_memory() -> int:
    """The memory this process may use: the machine's, or the lowest limit of the control
    groups it is in."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not on this system
        total = 1 << 45
    for path in _cgroup_limit_files():
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


class OverBudget(TraceviewError):
    """A trace with more events than the memory bound allows."""


class EventBudget:
    """The memory one analysis may take, charged as its events are read (both halves of a
    trace read by two threads charge the same budget)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.events = 0
        self.name_bytes = 0
        self._lock = threading.Lock()

    def take(self, events: int, name_bytes: int = 0) -> None:
        """`events` more complete events, and `name_bytes` more bytes of distinct names."""
        with self._lock:
            self.events += events
            self.name_bytes += name_bytes
            names = NAME_COPIES * self.name_bytes
            over = self.events * BYTES_PER_EVENT + names > self.max_bytes
        if not over:
            return
        bound = f"the memory bound of {self.max_bytes >> 20:,} MB"
        fix = "raise it with --max-memory-mb, or analyse on a machine with more"
        if names * 2 > self.max_bytes:
            raise OverBudget(
                f"events whose distinct names hold more than {self.name_bytes >> 20:,} MB: "
                f"analysing them needs more than {bound} (~{NAME_COPIES} times their names' "
                f"bytes, and {BYTES_PER_EVENT} bytes per event); {fix}"
            )
        raise OverBudget(
            f"more than {self.max_bytes // BYTES_PER_EVENT:,} events: analysing them needs more "
            f"than {bound} (~{BYTES_PER_EVENT} bytes per event); {fix}"
        )

    def give_back(self, events: int, name_bytes: int = 0) -> None:
        with self._lock:
            self.events -= events
            self.name_bytes -= name_bytes
