"""What the text and CSV renderers share: the rows of a rank's table and its caveats, from the
documents (traceview/documents)."""

from __future__ import annotations

from collections.abc import Sequence

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


def aligned_columns(head: Sequence[str], columns: Sequence[list[str]]) -> list[str]:
    """`aligned` for a table given a column at a time under its heading (every column
    right-aligned), made column by column: a table of 100,000s of rows."""
    justified = []
    for name, cells in zip(head, columns, strict=True):
        width = max(len(name), max(map(len, cells), default=0))
        justified.append([name.rjust(width), *(c.rjust(width) for c in cells)])
    return ["  " + "  ".join(row) for row in zip(*justified, strict=True)]


def aligned(
    rows: Sequence[Sequence[str]],
    indent: str = "  ",
    left_last: bool = False,
    left_first: bool = False,
) -> list[str]:
    """Right-align every column (the first and the last left-aligned if asked), two spaces
    apart."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [c.rjust(w) for c, w in zip(row, widths, strict=True)]
        if left_first:
            cells[0] = row[0].ljust(widths[0])
        if left_last:
            cells[-1] = row[-1]
        out.append(indent + "  ".join(cells))
    return out
