"""The gradients each backward pass makes ready: one `torch::autograd::AccumulateGrad` op per
parameter with a gradient, in the order they became ready, with the gradient's bytes from the
op's `Input Dims` and `Input type` (recorded with record_shapes=True; null without). DDP puts a
gradient in its bucket when it is ready, and never splits one: the last gradient ready is in
the backward pass's last bucket, which is no smaller than it whatever the bucket cap."""

from __future__ import annotations

import polars as pl

from traceview.model.batch import keyed
from traceview.model.messages import element_bytes, from_shapes
from traceview.model.steps import assign_steps
from traceview.parse.names import GRADIENT_READY, named
from traceview.queries import collected

# ready_ns: the op's end (the gradient is in place); bytes and elements: null where shapes were
# not recorded.
GRADIENTS_SCHEMA: dict[str, pl.DataType] = {
    "step": pl.Int64(),
    "ready_ns": pl.Int64(),
    "bytes": pl.Int64(),
    "elements": pl.Int64(),
}


def gradient_rows(events: pl.DataFrame, args: pl.DataFrame, spans: pl.DataFrame) -> pl.DataFrame:
    """(part,) step, ready_ns, bytes per gradient made ready, in each part's time order.
    `args`: the batch's kept args by row (parse/names.py KEEPS_ARGS); `spans`: its steps."""
    ops = collected(
        events.lazy()
        .filter(named(events, GRADIENT_READY))
        .select(*keyed(events, "row"), ready_ns=pl.col("end_ns")),
        events.height,
    )
    if ops.height == 0:
        empty = (pl.lit(None, t).alias(c) for c, t in GRADIENTS_SCHEMA.items())
        return ops.select(*keyed(ops), *empty)
    shapes = args.select(*keyed(args, "row"), "input_dims", "input_type")
    ops = ops.join(shapes, on=keyed(ops, "row"), how="left")
    # A model repeats a few shapes over every step: each distinct one read once.
    distinct = ops.select("input_dims", "input_type").unique()
    read = [_sized(d, t) for d, t in distinct.iter_rows()]
    sizes = distinct.with_columns(
        bytes=pl.Series([b for b, _ in read], dtype=pl.Int64),
        elements=pl.Series([e for _, e in read], dtype=pl.Int64),
    )
    ops = ops.join(sizes, on=["input_dims", "input_type"], how="left", nulls_equal=True)
    stepped = assign_steps(ops, "ready_ns", spans)
    ordered = stepped.sort(keyed(stepped, "ready_ns"), maintain_order=True)
    return ordered.select(*keyed(stepped), *GRADIENTS_SCHEMA).cast(GRADIENTS_SCHEMA)  # type: ignore[arg-type]


def _sized(dims: str | None, types: str | None) -> tuple[int | None, int | None]:
    """A gradient's (bytes, elements) from its op's `Input Dims` and `Input type`."""
    size, element = from_shapes("", dims, types)[0], element_bytes(None, types)
    return size, (size // element if size is not None and element else None)
