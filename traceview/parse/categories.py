"""Kineto's event categories, folded onto one closed set (the events table's `cat`)."""

from __future__ import annotations

import polars as pl

# Kineto has renamed its categories over the years; fold them onto one closed set.
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
        "other",
    ]
)
_CATEGORY_OF = {
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",
    "gpu_memset": "memset",
    "memset": "memset",
    "cuda_runtime": "runtime",
    "cuda_driver": "runtime",
    "runtime": "runtime",
    "cpu_op": "cpu_op",
    "operator": "cpu_op",
    "user_annotation": "user_annotation",
    "gpu_user_annotation": "gpu_annotation",
    "python_function": "python",
    "python": "python",
}


def category(raw: pl.Expr) -> pl.Expr:
    """Kineto's category names, folded onto CATEGORY (evaluated once per distinct name)."""
    return (
        raw.cast(pl.String)
        .str.to_lowercase()
        .replace_strict(_CATEGORY_OF, default="other", return_dtype=CATEGORY)
    )
