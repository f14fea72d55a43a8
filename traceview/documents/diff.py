"""`traceview diff`'s document, from the two runs loaded (analysis/diff.py)."""

from __future__ import annotations

from traceview.analysis.diff import CallsChange, Change
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
    )
