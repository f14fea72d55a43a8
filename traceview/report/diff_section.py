"""The report's "B against A" section, for a report of two runs: where the step's time went
between them (docs/metrics.md "Diff"), from the same document as `traceview diff`."""

from __future__ import annotations

import html

from traceview import Runs, TraceviewError
from traceview.documents import structs as d
from traceview.documents.diff import diff
from traceview.plain import UNKNOWN, counted
from traceview.report.htmlpage import table_html

ANCHOR = "diff"
SHOWN = 8  # collectives and buckets; `traceview diff` has every one


def _judged(c: d.ChangeJson) -> str:
    return {True: "within noise", False: "beyond noise", None: UNKNOWN}[c.within_noise]


def _row(c: d.ChangeJson, name: str) -> list[str]:
    pct = "" if c.change_pct is None else f" ({c.change_pct:+.0f} %)"
    return [html.escape(name), f"{c.before:,.3f}", f"{c.after:,.3f}",
            f"{c.change:+,.3f}{pct}", _judged(c)]  # fmt: skip


def section(runs: Runs, names: dict[str, str]) -> str:
    """The section's HTML; what could not be compared, said in one line."""
    head = f'<h2 id="{ANCHOR}">B against A</h2>'
    try:
        doc = diff(runs)
    except TraceviewError as e:
        return head + f"<p>Not compared: {html.escape(e.message)}.</p>"
    a, b = (html.escape(names.get(n, n)) for n in (doc.before, doc.after))
    over_a, over_b = (counted(n, "rank-step") for n in doc.rank_steps)
    parts = [head, f"<p class=meta>A: {a} ({over_a}) · B: {b} ({over_b}) · ms per rank and "
                   "step.</p>"]  # fmt: skip
    rows = [_row(doc.step_ms, "step")] + [_row(p, p.what) for p in doc.parts]
    parts.append(table_html(["", "A", "B", "B − A", "judged"], rows, wrap_last=True))
    parts.append(
        "<p class=meta>Compute + exposed communication + idle = the step. Within noise: the "
        "change is under twice the standard error of the difference of the means, the steps "
        "the samples (docs/metrics.md, “Diff”).</p>"
    )
    if doc.most_changed:
        rows = [[str(m.rank), *_row(m.change, m.figure)] for m in doc.most_changed]
        parts.append(table_html(["rank", "changed most on one rank", "A", "B", "B − A",
                                 "judged"], rows, wrap_last=True))  # fmt: skip
        parts.append(
            f"<p class=meta>Each of {counted(len(doc.ranks), 'rank')} in both runs against "
            "itself, over its steps.</p>"
        )
    if doc.setup:
        rows = [[html.escape(c.what), html.escape(c.before), html.escape(c.after)]
                for c in doc.setup]  # fmt: skip
        parts.append(table_html(["set-up that differs", "A", "B"], rows))
    for title, items in (("collective", doc.collectives), ("bucket or FSDP module", doc.labels)):
        if items:
            rows = [
                [html.escape(c.name)] + [f"{x.before:,.2f} → {x.after:,.2f}"
                                         for x in (c.calls, c.megabytes, c.duration_ms,
                                                   c.exposed_ms)]
                for c in items[:SHOWN]
            ]  # fmt: skip
            parts.append(table_html([title, "calls", "MB", "ms", "exposed ms"], rows))
    parts += [f'<p class="flag">{html.escape(c)}</p>' for c in doc.caveats]
    return "\n".join(parts)
