"""What the text and CSV renderers share: the rows of a rank's table and its caveats, from the
documents (traceview/documents)."""

from __future__ import annotations

from collections.abc import Sequence

from traceview.documents import structs as d

PARTIAL = " (partial)"  # after the step of a trace cut short that may be missing work
# The breakdown's figures in their order (window_us ... overlap_pct).
BREAKDOWN = list(d.BreakdownJson.__struct_fields__)


def rank_rows(r: d.Rank, before: str, partial: str = "") -> list[tuple[str, d.BreakdownJson]]:
    """(label, breakdown) per row of one rank: before the first step, each step, the total."""
    rows: list[tuple[str, d.BreakdownJson]] = [
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


def aligned(
    rows: Sequence[Sequence[str]],
    indent: str = "  ",
    left_last: bool = False,
    left_first: bool = False,
) -> list[str]:
    """`aligned_columns` for a table given a row at a time, its first row the headings."""
    columns = [list(column) for column in zip(*rows, strict=True)]
    return aligned_columns(
        [c[0] for c in columns], [c[1:] for c in columns], indent, left_last, left_first
    )


def aligned_columns(
    head: Sequence[str],
    columns: Sequence[list[str]],
    indent: str = "  ",
    left_last: bool = False,
    left_first: bool = False,
) -> list[str]:
    """Right-align every column under its heading (the first left-aligned, the last left as it
    is, if asked), two spaces apart; made a column at a time: a table of 100,000s of rows."""
    shown = []
    for i, (name, cells) in enumerate(zip(head, columns, strict=True)):
        column = [name, *cells]
        if left_last and i == len(columns) - 1:
            shown.append(column)
            continue
        width = max(map(len, column))
        pad = str.ljust if left_first and i == 0 else str.rjust
        shown.append([pad(c, width) for c in column])
    return [indent + "  ".join(row) for row in zip(*shown, strict=True)]
