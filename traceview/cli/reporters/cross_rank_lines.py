"""The table's lines for what `ranks` finds across a job's ranks: stragglers by step, step
skew, and desync signs."""

from __future__ import annotations

from traceview.documents import structs as d
from traceview.documents.words import stragglers_said
from traceview.plain import UNKNOWN, counted


def straggler_lines(s: d.Stragglers | None) -> list[str]:
    """The verdict, then the steps as runs of the same straggler (steps 1–4: rank 2)."""
    if s is None or not s.per_step:
        return []
    head = f"  stragglers by step: {stragglers_said(s)}"
    runs: list[list[object]] = []  # [first step, last step, rank]
    for step in s.per_step:
        if runs and runs[-1][2] == step.rank and runs[-1][1] == step.step - 1:
            runs[-1][1] = step.step
        else:
            runs.append([step.step, step.step, step.rank])
    said = [
        f"{'step' if a == b else 'steps'} {a if a == b else f'{a}–{b}'}: "
        f"{UNKNOWN if who is None else f'rank {who}'}"
        for a, b, who in runs
    ]
    return [head, "    " + " · ".join(said)]


DESYNC_SHOWN = 10  # signs listed; the JSON holds every one


def desync_lines(found: d.DesyncJson | None) -> list[str]:
    if found is None:
        return []
    lines = [f"  desync: not judged: {why}" for why in found.unjudged]
    if found.groups:
        checked = (
            f"{counted(found.calls, 'call')} of {counted(found.groups, 'group')} lined up by "
            f"{found.keyed_by}"
        )
        lines.append(
            f"  desync: {checked}: "
            + (
                counted(len(found.signs), "sign")
                if found.signs
                else "every rank ran the same calls"
            )
        )
    lines += [f"    {s.said}" for s in found.signs[:DESYNC_SHOWN]]
    if len(found.signs) > DESYNC_SHOWN:
        lines.append(
            f"    … {len(found.signs) - DESYNC_SHOWN} more (--format json lists every one)"
        )
    return lines


def skew_lines(job: d.JobRanks) -> list[str]:
    return [
        f"  step {s.step}: {s.shortest_us / 1e3:,.3f}–{s.longest_us / 1e3:,.3f} ms "
        f"across ranks (skew {s.skew_us / 1e3:,.3f} ms, longest on rank {s.slowest_rank})"
        for s in job.step_skew
    ]
