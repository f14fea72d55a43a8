"""What a DDP job's last gradient bucket holds, and the least time its reduce can take.

DDP reduces its buckets in the order their gradients become ready and never splits a tensor,
so the last bucket holds the last gradient made ready (in DDP, the first parameter registered:
usually an embedding) and is no smaller than it, whatever `bucket_cap_mb`. That gradient's own
reduce is the backward tail's floor: a lower cap can at most take the tail down to it. The
gradient's size comes from the trace (the last `AccumulateGrad` op's `Input Dims`, recorded
with record_shapes=True); without shapes, only whether the last bucket is out of line with the
others (DDP fills each bucket to the cap, so one far larger may hold a tensor above it)."""

from __future__ import annotations

import msgspec
import polars as pl

from traceview.analysis.job import JobReport

# A last bucket this many times its step's largest other is out of line with the cap.
OUTSIZED = 2


class LastBucket(msgspec.Struct, frozen=True, kw_only=True):
    bucket_bytes: int  # the last bucket's bytes (median over those)
    reduce_ns: int  # its reduce: transfer time where the ranks are aligned, else its duration
    on: str  # "transfer" or "duration"
    element_bytes: int | None  # the size of one of its elements (2: already reduced in 16 bits)
    gradient_bytes: int | None  # the last gradient made ready (median); None without shapes
    gradients_known: int  # (rank, step)s whose last gradient's size is recorded
    others_bytes: int | None  # the step's largest other backward all-reduce (median); None alone

    @property
    def outsized(self) -> bool:
        """The last bucket is more than OUTSIZED × every other bucket of its step: DDP fills
        buckets to the cap, so one this much larger may hold a tensor above it."""
        return self.others_bytes is not None and self.bucket_bytes > OUTSIZED * self.others_bytes

    @property
    def gradient_share(self) -> float | None:
        """The last gradient's share of the last bucket."""
        if self.gradient_bytes is None or not self.bucket_bytes:
            return None
        return min(1.0, self.gradient_bytes / self.bucket_bytes)

    @property
    def floor_ns(self) -> int | None:
        """The last gradient's own reduce, at the bucket's measured rate: a bucket holding only
        it would take this long (a lower bound: a reduce's fixed cost does not shrink)."""
        share = self.gradient_share
        return None if share is None else round(self.reduce_ns * share)


def last_bucket(job: JobReport) -> LastBucket | None:
    """None where no step of any rank has a backward all-reduce of known size."""
    calls = job.calls.filter(
        pl.col("backward")
        & (pl.col("collective") == "all_reduce")
        & pl.col("step").is_not_null()
        & pl.col("bytes").is_not_null()
    )
    if calls.height == 0:
        return None
    on = "transfer" if job.aligned else "duration"
    time = pl.col("transfer_ns") if job.aligned else pl.col("dur_ns")
    last = (
        calls.sort("ready_ns", "start_ns", maintain_order=True)
        .group_by("rank", "step", maintain_order=True)
        .agg(
            bucket_bytes=pl.col("bytes").last(),
            reduce_ns=time.last(),
            elements=pl.col("elements").last(),
            others_bytes=pl.col("bytes").head(pl.len() - 1).max(),
        )
        .drop_nulls("reduce_ns")
    )
    if last.height == 0:
        return None
    ready = pl.DataFrame(
        [
            (r.rank, g.step, g.last_bytes)
            for r in job.ranks
            if r.rank is not None
            for g in r.gradients
            if g.last_bytes is not None
        ],
        schema={"rank": pl.Int32, "step": pl.Int64, "gradient_bytes": pl.Int64},
        orient="row",
    )
    both = last.join(ready, on=["rank", "step"], how="left")
    sized = both.filter(pl.col("elements") > 0)
    return LastBucket(
        bucket_bytes=_median(both["bucket_bytes"]) or 0,
        reduce_ns=_median(both["reduce_ns"]) or 0,
        on=on,
        element_bytes=_median(sized["bucket_bytes"] // sized["elements"]),
        gradient_bytes=_median(both["gradient_bytes"]),
        gradients_known=both.height - both["gradient_bytes"].null_count(),
        others_bytes=_median(both["others_bytes"]),
    )


def _median(values: pl.Series) -> int | None:
    """The median of the known values, a whole number; None where none is known."""
    known = values.drop_nulls()
    return int(known.median()) if known.len() else None  # type: ignore[arg-type]
