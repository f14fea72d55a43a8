"""`traceview diff`'s document, from the two runs loaded (analysis/diff.py)."""

from __future__ import annotations

from traceview.analysis.diff import RANK_FIGURES, CallsChange, Change, Diff, RankChange
from traceview.documents import structs as d
from traceview.documents.build import envelope, errors
from traceview.documents.steps import StepSelection
from traceview.loader import Runs


def change(c: Change) -> d.ChangeJson:
    return d.ChangeJson(
        what=c.what, before=c.before, after=c.after, change=c.change, change_pct=c.change_pct,
        noise=c.noise, within_noise=c.within_noise,
    )  # fmt: skip


def calls_change(c: CallsChange) -> d.CallsChangeJson:
    return d.CallsChangeJson(
        name=c.name,
        calls=change(c.calls),
        megabytes=change(c.megabytes),
        duration_ms=change(c.duration_ms),
        exposed_ms=change(c.exposed_ms),
    )


def rank_change(r: RankChange) -> d.RankChangeJson:
    return d.RankChangeJson(
        rank=r.rank, step_ms=change(r.step_ms), compute=change(r.compute),
        exposed=change(r.exposed), idle=change(r.idle),
        waiting=change(r.waiting) if r.waiting is not None else None,
    )  # fmt: skip


def most_changed(found: Diff) -> list[d.MostChangedJson]:
    out = []
    for field, figure in RANK_FIGURES.items():
        rank = found.most_changed(field)
        if rank is not None:
            out.append(d.MostChangedJson(figure=figure, rank=rank.rank,
                                         change=change(getattr(rank, field))))  # fmt: skip
    return out


def slower(doc: d.DiffDocument, pct: float) -> bool | None:
    """Run B's step slower than run A's by more than `pct` % beyond the noise: the change less
    its noise (the low end of its interval) above `pct` % of A's step; None where the change
    cannot be judged (`diff --fail-if-slower`)."""
    step = doc.step_ms
    if step.noise is None or not step.before:
        return None
    return step.change - step.noise > pct / 100 * step.before


def diff(
    runs: Runs, a_steps: StepSelection | None = None, b_steps: StepSelection | None = None
) -> d.DiffDocument:
    found = runs.diff(a_steps, b_steps)
    return d.DiffDocument(
        **envelope(),
        before=found.before,
        after=found.after,
        rank_steps=list(found.rank_steps),
        step_ms=change(found.step_ms),
        parts=[change(p) for p in found.parts],
        collectives=[calls_change(c) for c in found.collectives],
        labels=[calls_change(c) for c in found.labels],
        kernels=[change(k) for k in found.kernels],
        caveats=list(found.caveats),
        errors=errors(runs),
        steps=list(found.steps),
        ranks=[rank_change(r) for r in found.ranks],
        most_changed=most_changed(found),
        setup=[d.SetupChangeJson(what=c.what, before=c.before, after=c.after) for c in found.setup],
    )
