"""CPU spans that give work its context: the FSDP module a collective serves, and whether
work belongs to the backward pass (compute inside an autograd engine function; communication
launched there or from one of FSDP's backward hooks)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

import polars as pl

from traceview.model.batch import keyed, with_part_type
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


def spans(events: pl.DataFrame, pattern: str, *, names_as_text: bool = True) -> pl.DataFrame:
    """CPU spans whose names match `pattern`, sorted by start (those starting together in the
    trace's order), with their part (model/batch.py); their names as text, or as the events
    hold them."""
    name = pl.col("name").cast(pl.String) if names_as_text else pl.col("name")
    return collected(
        events.lazy()
        .filter(pl.col("cat").is_in(["cpu_op", "user_annotation"]) & named(events, pattern))
        .select(
            *keyed(events, "pid", "tid"),
            scope_start=pl.col("ts_ns"),
            scope_end=pl.col("end_ns"),
            scope_name=name,
        )
        .sort("scope_start", maintain_order=True),
        events.height,
    )


def innermost(
    frame: pl.DataFrame, when: str, pid: str, tid: str, scopes: Mapping[str, pl.DataFrame]
) -> pl.DataFrame:
    """Add a column per (out, its scopes): the name of the latest-starting of those scopes on
    the same thread of the same part that contains `when` (spans nest, so that is the
    innermost), or null. The
    keys are sorted once for every set of scopes (a small rank's queries cost more than their
    rows: a set a call had cost six)."""
    wanted = {out: table for out, table in scopes.items() if table.height}
    if not wanted or frame.height == 0:
        return frame.with_columns(pl.lit(None, pl.String).alias(out) for out in scopes)
    # Only the keys are sorted and joined (the frame may be wide), then put back in order.
    by = keyed(frame, "pid", "tid")
    ordered = (
        frame.select(
            *by[:-2],  # the part, in a batch of several traces
            _order=pl.int_range(pl.len(), dtype=pl.UInt32),
            _at=pl.col(when),
            _when=pl.col(when).fill_null(-1),
            pid=pl.col(pid).fill_null(-1),
            tid=pl.col(tid).fill_null(-1),
        )
    ).sort("_when")
    found = [ordered["_order"], ordered["_at"]]
    for i, table in enumerate(wanted.values()):
        joined = ordered.join_asof(  # in the keys' order: the left side's order is kept
            table,
            left_on="_when",
            right_on="scope_start",
            by=by,
            strategy="backward",
            check_sortedness=False,
        )
        found += [joined["scope_end"].alias(f"_end{i}"), joined["scope_name"].alias(f"_name{i}")]
    at = pl.col("_at")
    back = (
        pl.DataFrame(found)
        .select(
            "_order",
            *(
                pl.when(at.is_not_null() & (at < pl.col(f"_end{i}")))
                .then(pl.col(f"_name{i}"))
                .alias(out)
                for i, out in enumerate(wanted)
            ),
        )
        .sort("_order")
    )
    return frame.with_columns(
        back[out] if out in wanted else pl.lit(None, pl.String).alias(out) for out in scopes
    )


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
        return pl.DataFrame(schema=with_part_type(SCOPES_SCHEMA, events))
    return spans(events, "^(?:" + "|".join(re.escape(op) for op in chosen) + ")$")


class ContextSpans(NamedTuple):
    """The CPU spans that give work its context."""

    # The autograd engine's functions: the backward pass's compute, and the communication
    # their hooks launch (DDP's buckets).
    autograd: pl.DataFrame
    # Where backward communication is launched: autograd's functions and FSDP's backward hooks
    # and callbacks (FSDP's post-backward work is backward work).
    gradient_comm: pl.DataFrame
    # FSDP's spans, which name the module they serve.
    fsdp: pl.DataFrame


def context_spans(events: pl.DataFrame) -> ContextSpans:
    """Each kind of ContextSpans, from one pass over the events (a pass each had cost a large
    trace three)."""
    found = spans(events, f"{AUTOGRAD_OP}|{FSDP_BACKWARD_HOOK}|{FSDP_SPAN}", names_as_text=False)

    def matching(pattern: str) -> pl.DataFrame:
        return collected(
            found.lazy()
            .filter(named(found, pattern, "scope_name"))
            .with_columns(pl.col("scope_name").cast(pl.String)),
            found.height,
        )

    return ContextSpans(
        autograd=matching(AUTOGRAD_OP),
        gradient_comm=matching(f"{AUTOGRAD_OP}|{FSDP_BACKWARD_HOOK}"),
        fsdp=matching(FSDP_SPAN),
    )
