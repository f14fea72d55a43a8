"""What every finding is (docs/findings.md), and what the rules share."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from traceview.analysis.job import JobReport


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    # backward_tail, small_buckets, unhidden_gathers, desync, straggler, rotating_stragglers,
    # slow_link, gpu_idle, overlap_tax, waiting, noisy_steps, memory_fit
    rule: str
    job: str
    what: str  # what the numbers show
    action: str  # what to do about it
    numbers: dict[str, float | int | str] = msgspec.field(default_factory=dict)

    @property
    def text(self) -> str:
        return f"{self.what} → {self.action}"


# Exposed communication matters from this share of the ranks' step time.
MATERIAL_SHARE = 0.05


def window_ns(job: JobReport) -> int:
    """The ranks' time in profiler steps (whole traces where there are no steps)."""
    total = 0
    for r in job.ranks:
        if r.steps:
            total += sum(s.breakdown.window_ns for s in r.steps)
        elif r.total is not None:
            total += r.total.window_ns
    return total


def ms(ns: float) -> float:
    return round(ns / 1e6, 3)


def traced_of(job: JobReport) -> tuple[int, int]:
    """(ranks traced, the job's world size): the world is the largest any trace says."""
    traced = len({r.rank for r in job.ranks if r.rank is not None}) or len(job.ranks)
    world = max((r.world_size for r in job.ranks if r.world_size), default=traced)
    return traced, max(world, traced)
