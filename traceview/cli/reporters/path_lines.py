"""`traceview critical-path` as a table (docs/commands/critical-path.md)."""

from __future__ import annotations

from typing import get_args

from traceview.cli.reporters.common import aligned
from traceview.documents.path_structs import (
    Category,
    CriticalPathDocument,
    JobPath,
    PathPart,
    PathSegment,
    StepPath,
)
from traceview.documents.words import job_said
from traceview.plain import UNKNOWN, counted

SHOWN_PARTS = 8  # rows of a job's totals; the JSON and CSV hold every one
LEGS_UP_TO = 3  # steps whose path is listed rank by rank (more: choose with --steps)
SHOWN_LEGS = 20


def _part(p: PathPart) -> str:
    return f"rank {p.rank} {p.category} {100 * p.share:.0f}%"


def _legs(segments: list[PathSegment]) -> list[list[PathSegment]]:
    """Runs of segments on one rank: the path between two crossings."""
    legs: list[list[PathSegment]] = []
    for g in segments:
        if legs and legs[-1][-1].rank == g.rank:
            legs[-1].append(g)
        else:
            legs.append([g])
    return legs


NAME_SHOWN = 40  # characters of a kernel's name in the table (a CUDA name runs to hundreds)


def _mostly(leg: list[PathSegment]) -> str:
    """The work that takes most of a leg's time, by its segments' largest work."""
    time: dict[str, float] = {}
    for g in leg:
        if g.top_work is not None:
            time[g.top_work] = time.get(g.top_work, 0.0) + g.us
    if not time:
        return UNKNOWN
    name = min(time, key=lambda n: (-time[n], n))
    return name if len(name) <= NAME_SHOWN else name[: NAME_SHOWN - 1] + "…"


def _leg_lines(step: StepPath) -> list[str]:
    legs = _legs(step.segments)
    present = [c for c in get_args(Category) if any(g.category == c for g in step.segments)]
    rows = [["from ms", "ms", "rank", "from rank", *(f"{c} ms" for c in present), "mostly"]]
    previous = ""
    for leg in legs[:SHOWN_LEGS]:
        ms = dict.fromkeys(present, 0.0)
        for g in leg:
            ms[g.category] += g.us / 1000
        # The path moved to the rank before (in time) at the collective this leg starts with.
        via = f"{previous} by {leg[0].collective}" if previous and leg[0].collective else previous
        rows.append([
            f"{leg[0].at_us / 1000:,.3f}", f"{sum(g.us for g in leg) / 1000:,.3f}",
            str(leg[0].rank), via or UNKNOWN, *(f"{ms[c]:,.3f}" if ms[c] else "" for c in present),
            _mostly(leg),
        ])  # fmt: skip
        previous = str(leg[0].rank)
    lines = aligned(rows, indent="    ", left_first=True)
    if len(legs) > SHOWN_LEGS:
        lines.append(f"    … {len(legs) - SHOWN_LEGS} more (--format json)")
    return lines


def _job_lines(job: JobPath) -> list[str]:
    across = counted(job.ranks, "rank")
    lines = [f"{job_said(job.job)} — critical path across {across}, clock {job.clock}"]
    if not job.found:
        return [*lines, f"  none: {job.reason}"]
    step_ms = sum(s.step_us for s in job.steps) / 1000
    rows = [
        ["rank", "category", "ms", f"share of {counted(len(job.steps), 'step')}, {step_ms:,.3f} ms"]
    ]
    rows += [
        [str(p.rank), p.category, f"{p.us / 1000:,.3f}", f"{100 * p.share:.1f}%"]
        for p in job.totals[:SHOWN_PARTS]
    ]
    lines += aligned(rows, indent="  ", left_first=True)
    if len(job.totals) > SHOWN_PARTS:
        lines.append(f"  … {len(job.totals) - SHOWN_PARTS} more (--format json or csv)")
    rows = [["step", "ms", "crossings", "largest parts"]]
    rows += [
        [str(s.step), f"{s.step_us / 1000:,.3f}", str(s.crossings),
         ", ".join(_part(p) for p in s.parts[:3])]
        for s in job.steps
    ]  # fmt: skip
    lines += ["", *aligned(rows, indent="  ", left_first=True)]
    if len(job.steps) <= LEGS_UP_TO:
        for s in job.steps:
            lines += ["", f"  step {s.step}: the path rank by rank, from the first rank's start"]
            lines += _leg_lines(s)
    else:
        lines.append("  (each step's path rank by rank: --steps N; every segment: --format json)")
    if job.reason:
        lines.append(f"  note: {job.reason}")
    lines += [f"  ! {c}" for c in job.caveats]
    return lines


def critical_path_table(doc: CriticalPathDocument) -> str:
    blocks = ["\n".join(_job_lines(job)) for job in doc.jobs]
    return "\n\n".join(blocks) + "\n" + "  (docs/metrics.md, Critical path)\n"
