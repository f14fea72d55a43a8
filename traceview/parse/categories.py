"""Kineto's event categories, folded onto one closed set (the events table's `cat`)."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

# Kineto has renamed its categories over the years, and names some per accelerator; fold them
# onto one closed set. Kineto's ActivityType.h declares each accelerator's names aliases of the
# common ones (MTIA_CCP_EVENTS = CONCURRENT_KERNEL, XPU_RUNTIME = RUNTIME, ...).
CATEGORY = pl.Enum(
    [
        "kernel",
        "memcpy",
        "memset",
        "runtime",
        "cpu_op",
        "user_annotation",
        "gpu_annotation",
        "python",
        "accelerator",  # device work of an accelerator the model does not read
        "collective",  # a collective an accelerator's runtime records as an event of its own
        "other",
    ]
)
_CATEGORY_OF = {
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",
    "gpu_memset": "memset",
    "memset": "memset",
    "mtia_ccp_events": "kernel",  # MTIA's on-device kernels
    "cuda_runtime": "runtime",
    "cuda_driver": "runtime",
    "runtime": "runtime",
    "driver": "runtime",
    "mtia_runtime": "runtime",
    "xpu_runtime": "runtime",
    "xpu_driver": "runtime",
    "privateuse1_runtime": "runtime",
    "privateuse1_driver": "runtime",
    "cpu_op": "cpu_op",
    "operator": "cpu_op",
    "user_annotation": "user_annotation",
    "gpu_user_annotation": "gpu_annotation",
    "python_function": "python",
    "python": "python",
    # Collectives a runtime records as events of their own (XPU's oneCCL, through PTI)
    "collective_comm": "collective",
}
# Any other category naming kernels is device work of an accelerator the model does not read.
_ACCELERATOR_KERNELS = "kernel"


def fold(written: str) -> str:
    """One of Kineto's category names, as written, folded onto CATEGORY. Folded in Python, once
    per distinct name: a trace writes a handful, and a polars query for them cost a small
    trace's reading a few milliseconds of set-up (CHANGELOG.md, "Speed work before the
    changelog")."""
    lower = written.lower()
    if lower in _CATEGORY_OF:
        return _CATEGORY_OF[lower]
    return "accelerator" if _ACCELERATOR_KERNELS in lower else "other"


def folded(written: Iterable[str]) -> pl.Series:
    """Category names as written, each folded onto CATEGORY, in their order."""
    return pl.Series("cat", [fold(c) for c in written], dtype=CATEGORY)


def category(raw: pl.Expr, written: Iterable[str]) -> pl.Expr:
    """`raw`, whose category names are among `written`, folded onto CATEGORY."""
    fold_of = {c: fold(c) for c in set(written)}
    if not fold_of:  # none at all (polars' replace_strict of no values keeps the column's type)
        return raw.cast(pl.String).cast(CATEGORY)
    return raw.cast(pl.String).replace_strict(fold_of, return_dtype=CATEGORY)
