"""Plain-text tables: the one way every command lines its columns up."""

from __future__ import annotations

from collections.abc import Sequence


def aligned(
    rows: Sequence[Sequence[str]], indent: str = "  ", left_last: bool = False
) -> list[str]:
    """Right-align every column (the last one left-aligned if asked), two spaces apart."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [c.rjust(w) for c, w in zip(row, widths, strict=True)]
        if left_last:
            cells[-1] = row[-1]
        out.append(indent + "  ".join(cells))
    return out
