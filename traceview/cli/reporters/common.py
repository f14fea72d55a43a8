"""What the text and CSV renderers share: the rows of a rank's table and its caveats, from the
documents (traceview/documents)."""

from __future__ import annotations

from traceview.documents import structs as d

PARTIAL = " (partial)"  # after the step of a trace cut short that may be missing work
# The breakdown's figures in their order (window_us ... overlap_pct).
BREAKDOWN = list(d.Breakdown.__struct_fields__)


def rank_rows(r: d.Rank, before: str, partial: str = "") -> list[tuple[str, d.Breakdown]]:
    """(label, breakdown) per row of one rank: before the first step, each step, the total."""
    rows: list[tuple[str, d.Breakdown]] = [
        (before if s.before_first_step else f"{s.step}{partial if s.partial else ''}", s)
        for s in r.steps
    ]
    if r.total:
        rows.append(("total", r.total))
    return rows


def caveats(r: d.Rank) -> str:
    """The rank's notes that say a figure may mislead (input lost first), on one line."""
    return " | ".join(
        [n.message for n in r.notes if n.severity == "lossy"]
        + [n.message for n in r.notes if n.severity == "caveat"]
    )
