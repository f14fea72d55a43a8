"""`traceview diff` as a table (docs/commands/diff.md)."""

from __future__ import annotations

from traceview.cli.reporters.common import aligned
from traceview.documents import structs as d
from traceview.documents.words import job_said
from traceview.plain import UNKNOWN, counted

SHOWN = 12  # rows per section; the JSON and CSV hold every one


def _said(c: d.ChangeJson, unit: str) -> list[str]:
    pct = "" if c.change_pct is None else f" ({c.change_pct:+.0f}%)"
    judged = {True: "within noise", False: "beyond noise", None: UNKNOWN}[c.within_noise]
    return [
        f"{c.before:,.3f}{unit}",
        f"{c.after:,.3f}{unit}",
        f"{c.change:+,.3f}{unit}{pct}",
        judged,
    ]


def diff_table(doc: d.DiffDocument) -> str:
    n_a, n_b = doc.rank_steps
    lines = [
        f"A: {job_said(doc.before)} ({counted(n_a, 'rank-step')})",
        f"B: {job_said(doc.after)} ({counted(n_b, 'rank-step')})",
        "",
    ]
    rows = [["per rank and step", "A", "B", "B - A", "judged"]]
    rows.append(["step", *_said(doc.step_ms, " ms")])
    rows += [[f"  {p.what}", *_said(p, " ms")] for p in doc.parts]
    lines += aligned(rows, indent="", left_first=True)
    lines += [
        "  (compute + exposed communication + idle = the step; within noise: |B - A| under",
        "  twice the standard error of the difference of the means, steps the samples:",
        "  docs/metrics.md, Diff)",
    ]
    lines += _per_rank(doc) + _setup(doc)
    for title, items in (("collective", doc.collectives), ("bucket / module", doc.labels)):
        if not items:
            continue
        rows = [[title, "calls A → B", "MB A → B", "ms A → B", "exposed ms A → B"]]
        for c in items[:SHOWN]:
            rows.append([c.name] + [
                f"{x.before:,.2f} → {x.after:,.2f}"
                for x in (c.calls, c.megabytes, c.duration_ms, c.exposed_ms)
            ])  # fmt: skip
        lines += ["", *aligned(rows, indent="", left_first=True)]
        if len(items) > SHOWN:
            lines.append(f"  … {len(items) - SHOWN} more (--format json or csv)")
    if doc.kernels:
        rows = [["changed most (ms per rank and step)", "A", "B", "B - A"]]
        rows += [[k.what[:60], f"{k.before:,.3f}", f"{k.after:,.3f}", f"{k.change:+,.3f}"]
                 for k in doc.kernels]  # fmt: skip
        lines += ["", *aligned(rows, indent="", left_first=True)]
    lines += [f"! {c}" for c in doc.caveats]
    return "\n".join(lines) + "\n"


def _per_rank(doc: d.DiffDocument) -> list[str]:
    """The rank whose compute, waiting and exposed communication changed most, each against
    its own steps' spread: one rank that changed, where the means over ranks hide it."""
    if not doc.most_changed:
        return []
    rows = [["changed most on one rank", "rank", "A", "B", "B - A", "judged"]]
    rows += [[m.figure, str(m.rank), *_said(m.change, " ms")] for m in doc.most_changed]
    return [
        "",
        *aligned(rows, indent="", left_first=True),
        f"  (of {counted(len(doc.ranks), 'rank')} in both runs, each against itself over its "
        "steps; every rank: --format json or csv)",
    ]


def _setup(doc: d.DiffDocument) -> list[str]:
    if not doc.setup:
        return []
    rows = [["set-up that differs", "A", "B"]]
    rows += [[c.what, c.before, c.after] for c in doc.setup]
    return ["", *aligned(rows, indent="", left_first=True)]
