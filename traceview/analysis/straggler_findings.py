"""The findings about ranks that others wait for: one rank (`straggler`), or a different rank
from step to step (`rotating_stragglers`). docs/findings.md."""

from __future__ import annotations

from traceview.analysis.finding import Finding, ms, traced_of
from traceview.analysis.job import JobReport
from traceview.analysis.stragglers import Recurrence

# A straggler arrives last at this share of the matched collectives (at least 1.5 / ranks, so
# that of two ranks one is not a straggler by chance), and the others wait this share of
# their time in collectives for it.
STRAGGLER_SHARE = 0.5
STRAGGLER_WAIT_SHARE = 0.10


def straggler(job: JobReport, name: str) -> Finding | None:
    """One rank arriving last at most collectives, and the others waiting for it."""
    cross = job.cross_rank
    if cross is None or not cross.aligned or cross.straggler is None or not cross.matched:
        return None
    n = len(cross.ranks)
    late = next(a for a in cross.ranks if a.rank == cross.straggler)
    share = late.last_arrivals / cross.matched
    others = [a for a in cross.ranks if a.rank != late.rank]
    wait = sum(a.wait_ns for a in others)
    busy = sum(a.wait_ns + a.transfer_ns for a in others)
    if share < max(STRAGGLER_SHARE, 1.5 / n) or not busy or wait < STRAGGLER_WAIT_SHARE * busy:
        return None
    skews = [s.longest_ns - s.shortest_ns for s in job.step_skew]
    skew = sorted(skews)[len(skews) // 2] if skews else None
    said_skew = f"; steps differ by {ms(skew):,.1f} ms across ranks (median)" if skew else ""
    steps, said_steps = _steps_of(job.recurrence, late.rank)
    return Finding(
        rule="straggler",
        job=name,
        what=(
            f"rank {late.rank} arrives last at {late.last_arrivals} of {cross.matched} "
            f"collectives; the other ranks spend {100 * wait / busy:.0f}% of their collective "
            f"time waiting for it{said_steps}{said_skew}"
        ),
        action=_look_at(late.rank, job),
        numbers={
            "rank": late.rank,
            "last_arrivals": late.last_arrivals,
            "matched": cross.matched,
            "others_wait_pct": round(100 * wait / busy, 1),
            **steps,
            **({"median_step_skew_ms": ms(skew)} if skew else {}),
        },
    )


def _steps_of(rec: Recurrence | None, rank: int) -> tuple[dict[str, int | str], str]:
    """The steps in which `rank` is the one waited for, in numbers and words (none without
    steps that had a straggler)."""
    if rec is None or not rec.judged:
        return {}, ""
    steps = sum(1 for s in rec.steps if s.rank == rank)
    numbers: dict[str, int | str] = {
        "steps_waited_for": steps,
        "steps_with_a_straggler": rec.judged,
        "recurrence": rec.verdict,
    }
    said = (
        f"; it is the rank waited for in {steps} of {rec.judged} steps with a straggler, "
        f"{_verdict(rec)}"
    )
    return numbers, said


def _verdict(rec: Recurrence) -> str:
    if rec.verdict == "one rank":
        return f"the same rank step after step (by chance {rec.chance:.1g})"
    if rec.verdict == "rotating":
        return f"a different rank from step to step ({rec.distinct} ranks)"
    if rec.verdict == "undecided":
        return "too few to tell a recurring rank from chance"
    return "too few to tell whether it recurs"


def rotating_stragglers(job: JobReport, name: str) -> Finding | None:
    """The ranks wait for a late rank, but a different one from step to step: no one rank is
    slow, something every rank does varies."""
    rec, cross = job.recurrence, job.cross_rank
    if rec is None or cross is None or rec.verdict != "rotating":
        return None
    wait = sum(a.wait_ns for a in cross.ranks)
    busy = sum(a.wait_ns + a.transfer_ns for a in cross.ranks)
    if not busy or wait < STRAGGLER_WAIT_SHARE * busy:
        return None
    return Finding(
        rule="rotating_stragglers",
        job=name,
        what=(
            f"the rank the others wait for changes from step to step: {rec.distinct} ranks "
            f"over {rec.judged} steps with a straggler, none in more than {rec.count}; the "
            f"ranks spend {100 * wait / busy:.0f}% of their collective time waiting"
        ),
        action=(
            "look at what varies from step to step on every rank, not at one host: data "
            "loading (DataLoader workers, pin_memory), inputs of uneven size (variable sequence "
            "lengths), the hosts' other work"
        ),
        numbers={
            "ranks_waited_for": rec.distinct,
            "steps_with_a_straggler": rec.judged,
            "most_steps_one_rank": rec.count,
            "wait_pct": round(100 * wait / busy, 1),
        },
    )


def _look_at(rank: int, job: JobReport) -> str:
    """Where a straggler's time goes: its GPU on GPU jobs, its CPU cores on CPU-only ones."""
    gpu = any(r.mode == "gpu" for r in job.ranks)
    device = (
        "its GPU's clocks and temperature"
        if gpu
        else "other processes on its CPU cores and their frequency"
    )
    traced, world = traced_of(job)
    pace = (
        "the job runs at its pace"
        if traced >= world
        else f"it is the slowest of the {traced} traced ranks; ranks not traced may be slower"
    )
    return f"look at rank {rank}: its host, its data loading, {device}; {pace}"
