"""Which DDP bucket each gradient all-reduce is, and the backward tail: how long gradient
communication runs on after the backward pass's compute has ended."""

from __future__ import annotations

import msgspec
import polars as pl

from traceview.analysis.stack import Stack
from traceview.model.batch import keyed
from traceview.parse.run_record import Bucket
from traceview.queries import collected

GRADIENT_COLLECTIVES = ("all_reduce", "reduce_scatter")


def label_buckets(calls: pl.DataFrame, buckets: list[Bucket] | None) -> pl.DataFrame:
    """Add `bucket`: DDP launches its bucket all-reduces in bucket order during backward, so
    the k-th backward all-reduce of a step is bucket k, when the step has exactly one per
    bucket and their sizes match the recorded layout."""
    if not buckets or calls.height == 0:
        return calls.with_columns(bucket=pl.lit(None, pl.Int64))
    sizes = [b.bytes for b in sorted(buckets, key=lambda b: b.index)]
    grads = _gradient_steps(calls)
    steps = _step_sizes(grads)
    matching = steps.filter(pl.Series([s == sizes for s in steps["sizes"].to_list()]))
    return _with_buckets(calls, grads.join(matching, on=["rank", "step"], how="semi"))


def label_repeated_buckets(calls: pl.DataFrame) -> pl.DataFrame:
    """Add `bucket` without a recorded layout, for a job whose gradients DDP reduces: where
    every step of every rank (two or more in all) launches the same number of backward
    all-reduces of the same sizes in the same order — DDP's buckets, fixed after its first
    step — the k-th of a step is bucket k."""
    grads = _gradient_steps(calls)
    steps = _step_sizes(grads)["sizes"].to_list()
    patterns = {tuple(sizes) for sizes in steps}
    if len(steps) < 2 or len(patterns) != 1 or None in next(iter(patterns)):
        return calls.with_columns(bucket=pl.lit(None, pl.Int64))
    return _with_buckets(calls, grads)


def _gradient_steps(calls: pl.DataFrame) -> pl.DataFrame:
    """Each rank and step's backward all-reduces, in launch order, numbered within their step
    (`bucket`: 0, 1, …) — one frame, not one per step: a job of 1,024 ranks has thousands."""
    grads = calls.filter(
        pl.col("backward") & (pl.col("collective") == "all_reduce") & pl.col("step").is_not_null()
    )
    return grads.sort("ready_ns", "start_ns", maintain_order=True).with_columns(
        bucket=pl.int_range(pl.len(), dtype=pl.Int64).over("rank", "step")
    )


def _step_sizes(grads: pl.DataFrame) -> pl.DataFrame:
    """rank, step, sizes: each step's message sizes in launch order."""
    return grads.group_by("rank", "step", maintain_order=True).agg(sizes=pl.col("bytes"))


def _with_buckets(calls: pl.DataFrame, numbered: pl.DataFrame) -> pl.DataFrame:
    if numbered.height == 0:
        return calls.with_columns(bucket=pl.lit(None, pl.Int64))
    return calls.join(numbered.select("rank", "index", "bucket"), on=["rank", "index"], how="left")


class BackwardTail(msgspec.Struct, frozen=True, kw_only=True):
    """From the end of the step's backward compute to the end of its last gradient collective."""

    step: int
    backward_end_ns: int
    last_gradient_comm_end_ns: int

    @property
    def tail_ns(self) -> int:
        return max(0, self.last_gradient_comm_end_ns - self.backward_end_ns)


def backward_tails(stack: Stack, calls: pl.DataFrame) -> list[list[BackwardTail]]:
    """Each part's steps with both backward compute and gradient collectives (`calls`: the
    stack's, analysis/calls.py)."""
    iv = stack.intervals
    compute = (
        iv.lazy()
        .filter(pl.col("step").is_not_null() & (pl.col("kind") == "compute") & pl.col("backward"))
        .group_by(keyed(iv, "step"))
        .agg(backward_end_ns=pl.col("end_ns").max())
    )
    grads = (
        calls.lazy()
        .filter(pl.col("backward") & pl.col("collective").is_in(GRADIENT_COLLECTIVES))
        .group_by(keyed(calls, "step"))
        .agg(last_gradient_comm_end_ns=pl.col("end_ns").max())
    )
    # One query (a small rank's seven had cost more than their rows).
    keys = keyed(iv, "step")
    both = collected(compute.join(grads, on=keys).sort(keys), iv.height)
    part = stack.part_of(both)
    tails = [
        BackwardTail(step=step, backward_end_ns=end, last_gradient_comm_end_ns=last)
        for step, end, last in both.select(
            "step", "backward_end_ns", "last_gradient_comm_end_ns"
        ).iter_rows()
    ]
    return stack.split(part, tails)
