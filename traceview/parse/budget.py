"""How much memory one trace's analysis may take, and the count that holds it to that.

Memory grows with the events a trace holds, not with its bytes: a gzip of a few MB can expand to
GBs of tiny events. The peak of an analysis (its tables, then the model built from them) stays
under BYTES_PER_EVENT per complete event: about 250 bytes for the smallest events (measured once,
by hand: a trace of two million tiny events peaked ~500 MB above the interpreter), about half the
file's size for real ones (benchmarks/bench_analyze.py, "Speed and memory"). Events are counted
as they are read; a trace whose events would need more than the bound is refused in one line,
before the memory is taken.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from traceview.errors import TraceviewError

BYTES_PER_EVENT = 256
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
    """Complete events one analysis may hold (both halves of a trace read by two threads count
    against the same budget)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.max_events = max(1, max_bytes // BYTES_PER_EVENT)
        self.events = 0
        self._lock = threading.Lock()

    def take(self, events: int) -> None:
        with self._lock:
            self.events += events
            over = self.events > self.max_events
        if over:
            raise OverBudget(
                f"more than {self.max_events:,} events: analysing them needs more than the "
                f"memory bound of {self.max_bytes >> 20:,} MB (~{BYTES_PER_EVENT} bytes per "
                "event); raise it with --max-memory-mb, or analyse on a machine with more"
            )

    def give_back(self, events: int) -> None:
        with self._lock:
            self.events -= events
