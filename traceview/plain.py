"""How every output says a count and a value not known: real plurals, one glyph for unknown."""

from __future__ import annotations

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
