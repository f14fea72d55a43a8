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
        "accelerator",  # device work of an accelerator the model does not read (MTIA, ...)
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
    "mtia_ccp_events": "accelerator",  # MTIA's on-device events
    "collective_comm": "accelerator",  # collectives an accelerator's runtime records
}
# Any other category naming kernels is device work of an accelerator the model does not read.
_ACCELERATOR_KERNELS = "kernel"


def category(raw: pl.Expr) -> pl.Expr:
    """Kineto's category names, folded onto CATEGORY (evaluated once per distinct name)."""
    lower = raw.cast(pl.String).str.to_lowercase()
    unknown_kernels = ~lower.is_in(list(_CATEGORY_OF)) & lower.str.contains(_ACCELERATOR_KERNELS)
    return (  # the `then` branch first: it names the result after `raw`
        pl.when(~unknown_kernels)
        .then(lower.replace_strict(_CATEGORY_OF, default="other"))
        .otherwise(pl.lit("accelerator"))
        .cast(CATEGORY)
    )
