"""How busy the machine is with work other than the sweep's: the cores other processes keep
busy, from /proc/stat's busy time on the cores the sweep may use, less the CPU time of the
sweep itself and of the runs it waited for (traceview's MachineLoad says when it matters)."""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Collection
from pathlib import Path

STAT = Path("/proc/stat")
_TICKS = os.sysconf("SC_CLK_TCK")
# A "cpuN" line: user nice system idle iowait irq softirq steal … (guest time is in user).
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)


def _busy_seconds(cores: Collection[int]) -> float | None:
    """Busy time so far on `cores`; None where /proc/stat cannot be read (not Linux)."""
    try:
        lines = STAT.read_text().splitlines()
        busy = 0
        for line in lines:
            name, *fields = line.split()
            if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cores:
                busy += sum(int(fields[i]) for i in _BUSY_FIELDS)
        return busy / _TICKS
    except (OSError, ValueError, IndexError):
        return None


def _ours_seconds() -> float:
    """CPU time of this process and of the children it has waited for (with theirs)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    runs = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + runs.ru_utime + runs.ru_stime


class Meter:
    """Started before a run, read after it was waited for: the cores (of `cores`) other
    processes kept busy meanwhile; None where that cannot be known."""

    def __init__(self, cores: Collection[int]) -> None:
        self._cores = cores
        self._busy, self._ours = _busy_seconds(cores), _ours_seconds()
        self._at = time.monotonic()

    def other_busy_cores(self) -> float | None:
        busy, wall = _busy_seconds(self._cores), time.monotonic() - self._at
        if busy is None or self._busy is None or wall <= 0:
            return None
        others = (busy - self._busy) - (_ours_seconds() - self._ours)
        return round(max(others, 0.0) / wall, 2)


def other_busy_cores_now(cores: Collection[int], seconds: float = 1.0) -> float | None:
    """The cores other processes keep busy now, over `seconds` of this process waiting."""
    meter = Meter(cores)
    time.sleep(seconds)
    return meter.other_busy_cores()
