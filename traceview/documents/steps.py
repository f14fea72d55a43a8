"""Which profiler steps a document covers (`--steps 3,5-7`), and which ranks a timeline holds
(`--ranks 0,4-7`), as ranges: never materialised, so 0-10^11 costs nothing."""

from __future__ import annotations

import re

import msgspec
import polars as pl

INT64_MAX = 2**63 - 1


class _Numbers(msgspec.Struct, frozen=True):
    ranges: tuple[tuple[int, int], ...]  # inclusive, within int64

    def __contains__(self, number: object) -> bool:
        return isinstance(number, int) and any(lo <= number <= hi for lo, hi in self.ranges)

    def __str__(self) -> str:
        return ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in self.ranges)


class StepSelection(_Numbers, frozen=True):
    def expr(self, column: str) -> pl.Expr:
        """True for rows whose `column` is a selected step."""
        inside = [pl.col(column).is_between(lo, hi) for lo, hi in self.ranges]
        return pl.any_horizontal(inside) if inside else pl.lit(False)


class RankSelection(_Numbers, frozen=True):
    """Which ranks (`--ranks 0,4-7`)."""


def parse_steps(text: str) -> StepSelection:
    """`3,5-7` as a StepSelection; ValueError, in one line, for anything else."""
    return StepSelection(_ranges(text, "step"))


def parse_ranks(text: str) -> RankSelection:
    """`0,4-7` as a RankSelection; ValueError, in one line, for anything else."""
    return RankSelection(_ranges(text, "rank"))


def _ranges(text: str, what: str) -> tuple[tuple[int, int], ...]:
    ranges = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise ValueError(f"not a {what} list: {text!r} (try 3,5-7)")
        lo, hi = int(m[1]), int(m[2] or m[1])
        if hi < lo:
            raise ValueError(f"empty {what} range: {part.strip()!r}")
        if lo <= INT64_MAX:
            ranges.append((lo, min(hi, INT64_MAX)))  # no number here goes past int64
    return tuple(ranges)
