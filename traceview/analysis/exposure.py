"""Where the exposed communication sits: per rank and step, the calls left exposed, most
exposed first — which buckets (or FSDP modules) to fix first."""

from __future__ import annotations

import msgspec
import polars as pl


class ExposedCall(msgspec.Struct, frozen=True, kw_only=True):
    index: int  # the call's index on its rank
    collective: str | None
    label: str | None  # "bucket 3", "blocks.2", or null
    exposed_ns: int

    @property
    def name(self) -> str:
        """The bucket ("bucket 3"); an FSDP module with the collective that served it
        ("reduce_scatter blocks.2": a module has an all-gather and a reduce-scatter); else the
        collective and the call's index on its rank."""
        collective = self.collective or "unknown"
        if self.label is None:
            return f"{collective} #{self.index}"
        return self.label if self.label.startswith("bucket ") else f"{collective} {self.label}"


class StepExposure(msgspec.Struct, frozen=True, kw_only=True):
    rank: int | None
    step: int | None
    exposed_ns: int  # the union of the calls' exposed time (their shares summed)
    calls: tuple[ExposedCall, ...]  # most exposed first


def exposure_by_step(calls: pl.DataFrame) -> list[StepExposure]:
    """From a job's calls table (analysis/job.py JOB_CALLS_SCHEMA), in rank and step order.
    One pass over the exposed calls, sorted by rank, step and exposure (a frame per step costs
    seconds where a CPU trace has tens of thousands of steps)."""
    exposed = calls.filter(pl.col("exposed_ns") > 0).sort(
        pl.col("rank").is_null(), "rank", pl.col("step").is_null(), "step",
        pl.col("exposed_ns"), descending=[False, False, False, False, True], maintain_order=True,
    )  # fmt: skip
    out: list[StepExposure] = []
    key: tuple[object, object] | None = None
    shares, held = 0, list[ExposedCall]()
    columns = ("rank", "step", "exposed_share_ns", "index", "collective", "label", "exposed_ns")
    for rank, step, share, index, collective, label, ns in exposed.select(columns).iter_rows():
        if key != (rank, step):
            if key is not None:
                out.append(_step(key, shares, held))
            key, shares, held = (rank, step), 0, []
        shares += share or 0  # concurrent calls once
        held.append(ExposedCall(index=index, collective=collective, label=label, exposed_ns=ns))
    if key is not None:
        out.append(_step(key, shares, held))
    return out


def _step(key: tuple[object, object], exposed_ns: int, calls: list[ExposedCall]) -> StepExposure:
    rank, step = key
    return StepExposure(rank=rank, step=step, exposed_ns=int(exposed_ns), calls=tuple(calls))  # type: ignore[arg-type]
