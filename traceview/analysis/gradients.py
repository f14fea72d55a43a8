"""Per step, the gradients a rank's backward passes made ready (model/gradients.py): how many,
their bytes and elements per pass, and the last one ready — the one whose DDP bucket is reduced
last. One backward pass makes each parameter's gradient ready once, so a step's gradients per
pass are the model's parameters (Ψ): the whole model under DDP and, as FSDP2 accumulates
into its unsharded parameters, under FSDP2 too."""

from __future__ import annotations

import msgspec
import polars as pl


class GradientStep(msgspec.Struct, frozen=True, kw_only=True):
    step: int
    gradients: int  # AccumulateGrad ops in one backward pass of the step
    passes: int  # backward passes in the step (gradient accumulation: the same gradients again)
    bytes: int | None  # one pass's gradients' bytes; None where a shape was not recorded
    elements: int | None  # one pass's gradients' elements; likewise
    last_bytes: int | None  # the last gradient made ready: its bytes


def gradient_steps(gradients: pl.DataFrame) -> list[GradientStep]:
    """gradients: a timeline's (step, ready_ns, bytes, elements), in time order."""
    rows = gradients.filter(pl.col("step").is_not_null())
    if rows.height == 0:
        return []
    out = []
    for (step,), mine in rows.group_by("step", maintain_order=True):
        sizes = mine["elements"].to_list()
        passes = _passes(sizes)
        one = mine.head(mine.height // passes)
        known = one["elements"].null_count() == 0
        out.append(
            GradientStep(
                step=int(step),  # type: ignore[call-overload]
                gradients=one.height,
                passes=passes,
                bytes=int(one["bytes"].sum()) if known and one["bytes"].null_count() == 0 else None,
                elements=int(one["elements"].sum()) if known else None,
                last_bytes=mine["bytes"][-1],
            )
        )
    return sorted(out, key=lambda g: g.step)


def _passes(sizes: list[int | None]) -> int:
    """How many times the step's sequence of gradient sizes repeats whole (a step of k
    backward passes makes the same gradients k times, in the same order); 1 where sizes are
    unknown."""
    n = len(sizes)
    if None in sizes or len(set(sizes)) == 1:  # one size throughout: no pass can be told
        return 1
    for period in range(2, n // 2 + 1):
        if n % period == 0 and sizes == sizes[:period] * (n // period):
            return n // period
    return 1
