"""The findings about ranks that others wait for: one rank (`straggler`), or a different rank
from step to step (`rotating_stragglers`). docs/findings.md."""

from __future__ import annotations

from traceview.analysis.finding import Finding, ms, traced_of
from traceview.analysis.job import JobReport
from traceview.analysis.stragglers import Recurrence

# A straggler's late arrivals cause this share of all the waiting in the job's collectives (at
# least 1.5 / ranks, so that of two ranks one is not a straggler by chance), and the others
# wait this share of their time in collectives for it.
STRAGGLER_SHARE = 0.5
STRAGGLER_WAIT_SHARE = 0.10


def straggler(job: JobReport, name: str) -> Finding | None:
    """One rank whose lateness causes most of the waiting, the others waiting for it for a
    material part of their collective time. Every figure is on that measure, the waiting it
    causes (docs/findings.md): how often a rank arrives last is another, and not said here."""
    cross = job.cross_rank
    if cross is None or not cross.aligned or cross.straggler is None or not cross.matched:
        return None
    n = len(cross.ranks)
    late = cross.of(cross.straggler)
    caused = late.caused_wait_ns
    waited = sum(a.wait_ns for a in cross.ranks)  # all the waiting, whoever caused it
    others = [a for a in cross.ranks if a.rank != late.rank]
    busy = sum(a.wait_ns + a.transfer_ns for a in others)
    if not waited or not busy:
        return None
    share = caused / waited
    if share < max(STRAGGLER_SHARE, 1.5 / n) or caused < STRAGGLER_WAIT_SHARE * busy:
        return None
    steps, said_steps = _steps_of(job.recurrence, late.rank)
    return Finding(
        rule="straggler",
        job=name,
        what=(
            f"rank {late.rank}'s late arrivals cost the other ranks {ms(caused):,.3f} ms of "
            f"waiting, {100 * share:.0f}% of all the waiting in the job's collectives and "
            f"{100 * caused / busy:.0f}% of their collective time{said_steps}"
        ),
        action=_look_at(late.rank, job),
        numbers={
            "rank": late.rank,
            "caused_wait_ms": ms(caused),
            "caused_share_pct": round(100 * share, 1),
            "others_wait_for_it_pct": round(100 * caused / busy, 1),
            **steps,
        },
    )


def _steps_of(rec: Recurrence | None, rank: int) -> tuple[dict[str, int | str], str]:
    """The steps in which `rank` is the one waited for (the step's costliest late rank), in
    numbers and words (none without steps that had a straggler). Whether it recurs is said of
    this rank alone: where another rank is waited for in more steps, that is said instead."""
    if rec is None or not rec.judged:
        return {}, ""
    steps = sum(1 for s in rec.steps if s.rank == rank)
    numbers: dict[str, int | str] = {
        "steps_waited_for": steps,
        "steps_with_a_straggler": rec.judged,
    }
    said = f"; it is the rank waited for longest in {steps} of {rec.judged} steps with a straggler"
    if rec.rank is not None and rec.rank != rank and rec.count > steps:
        numbers["most_steps_rank"] = rec.rank
        return numbers, f"{said} (rank {rec.rank} in more: {rec.count}, each costing less)"
    numbers["recurrence"] = rec.verdict
    return numbers, f"{said}, {_verdict(rec)}"


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
