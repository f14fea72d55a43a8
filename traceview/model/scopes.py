"""CPU spans that give work its context: the FSDP module a collective serves, and whether
work belongs to the backward pass (compute inside an autograd engine function; communication
launched there or from one of FSDP's backward hooks)."""

from __future__ import annotations

import re

import polars as pl

from traceview.parse.names import (
    AUTOGRAD_OP,
    FSDP_BACKWARD_HOOK,
    FSDP_SPAN,
    SYMM_MEM_PREFIX,
    named,
    runs_own_collective,
)
from traceview.queries import collected
from traceview.tables import SCOPES_SCHEMA


def spans(events: pl.DataFrame, pattern: str) -> pl.DataFrame:
    """CPU spans whose names match `pattern`, sorted by start."""
    return collected(
        events.lazy()
        .filter(pl.col("cat").is_in(["cpu_op", "user_annotation"]) & named(events, pattern))
        .select(
            "pid",
            "tid",
            scope_start=pl.col("ts_ns"),
            scope_end=pl.col("end_ns"),
            scope_name=pl.col("name").cast(pl.String),
        )
        .sort("scope_start"),
        events.height,
    )


def innermost(
    frame: pl.DataFrame, when: str, pid: str, tid: str, scopes: pl.DataFrame, out: str
) -> pl.DataFrame:
    """Add `out`: the name of the latest-starting scope on the same thread that contains
    `when` (spans nest, so that is the innermost), or null."""
    if scopes.height == 0 or frame.height == 0:
        return frame.with_columns(pl.lit(None, pl.String).alias(out))
    # Only the keys are sorted and joined (the frame may be wide), then put back in order.
    keyed = (
        frame.select(
            _order=pl.int_range(pl.len(), dtype=pl.UInt32),
            _at=pl.col(when),
            _when=pl.col(when).fill_null(-1),
            _pid=pl.col(pid).fill_null(-1),
            _tid=pl.col(tid).fill_null(-1),
        )
    ).sort("_when")
    joined = keyed.join_asof(
        scopes.rename({"pid": "_pid", "tid": "_tid"}),
        left_on="_when",
        right_on="scope_start",
        by=["_pid", "_tid"],
        strategy="backward",
        check_sortedness=False,
    )
    inside = pl.col("_at").is_not_null() & (pl.col("_at") < pl.col("scope_end"))
    found = joined.select("_order", pl.when(inside).then(pl.col("scope_name")).alias(out))
    return frame.with_columns(found.sort("_order")[out])


def fsdp_module(span_name: pl.Expr) -> pl.Expr:
    """ "FSDP::post_backward_reduce (blocks.2)" -> "blocks.2"; the root's spans name no module."""
    module = span_name.str.extract(r"\(([^()]*)\)\s*$", 1)
    module = pl.coalesce(module, span_name.str.extract(r" for (\S+)$", 1))
    return (
        pl.when(span_name.is_null())
        .then(None)
        .otherwise(
            pl.when(module.is_null() | (module == "")).then(pl.lit("root")).otherwise(module)
        )
    )


def own_collective_spans(events: pl.DataFrame) -> pl.DataFrame:
    """The CPU ops whose kernels are all communication (parse/names.py runs_own_collective)."""
    ops = events.filter(named(events, f"^{re.escape(SYMM_MEM_PREFIX)}"))["name"].unique()
    chosen = [str(op) for op in ops if runs_own_collective(str(op))]
    if not chosen:
        return pl.DataFrame(schema=SCOPES_SCHEMA)
    return spans(events, "^(?:" + "|".join(re.escape(op) for op in chosen) + ")$")


def fsdp_spans(events: pl.DataFrame) -> pl.DataFrame:
    return spans(events, FSDP_SPAN)


def autograd_spans(events: pl.DataFrame) -> pl.DataFrame:
    """The autograd engine's functions: the backward pass's compute, and the communication
    their hooks launch (DDP's buckets)."""
    return spans(events, AUTOGRAD_OP)


def gradient_comm_spans(events: pl.DataFrame) -> pl.DataFrame:
    """Where backward communication is launched: autograd's functions and FSDP's backward
    hooks and callbacks (FSDP's post-backward work is backward work)."""
    return spans(events, f"{AUTOGRAD_OP}|{FSDP_BACKWARD_HOOK}")
