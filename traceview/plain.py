"""How every output says a count and a value not known: real plurals, one glyph for unknown."""

from __future__ import annotations

from collections.abc import Iterable

# Printed wherever a value is not known (tables, report, dashboard); JSON writes null.
UNKNOWN = "–"

# The page that names each term outputs use (Ψ, busbw, E(N)…); outputs link to it.
GLOSSARY = "docs/glossary.md"


def noun(n: int, singular: str, plural: str | None = None) -> str:
    """`singular` when n is 1, else its plural ('rank'/'ranks', 'GPU'/'GPUs')."""
    return singular if n == 1 else (plural or singular + "s")


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """A count with its noun in the right number: '1 rank', '1,024 ranks'."""
    return f"{n:,} {noun(n, singular, plural)}"


def number_runs(numbers: Iterable[int]) -> str:
    """Numbers, sorted, as runs: '2–5, 8–11' (steps, ranks)."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in runs)
