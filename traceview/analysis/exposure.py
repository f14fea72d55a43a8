"""Where the exposed communication sits: per rank and step, the calls left exposed, most
exposed first — which buckets (or FSDP modules) to fix first."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True, kw_only=True)
class ExposedCall:
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


@dataclass(frozen=True, kw_only=True)
class StepExposure:
    rank: int | None
    step: int | None
    exposed_ns: int  # the union of the calls' exposed time (their shares summed)
    calls: tuple[ExposedCall, ...]  # most exposed first


def exposure_by_step(calls: pl.DataFrame) -> list[StepExposure]:
    """From a job's calls table (analysis/job.py JOB_CALLS_SCHEMA), in rank and step order."""
    exposed = calls.filter(pl.col("exposed_ns") > 0).sort("exposed_ns", descending=True)
    out = []
    for (rank, step), rows in exposed.group_by("rank", "step", maintain_order=True):
        out.append(
            StepExposure(
                rank=rank,  # type: ignore[arg-type]
                step=step,  # type: ignore[arg-type]
                exposed_ns=int(rows["exposed_share_ns"].sum()),  # concurrent calls once
                calls=tuple(
                    ExposedCall(**r)
                    for r in rows.select("index", "collective", "label", "exposed_ns").iter_rows(
                        named=True
                    )
                ),
            )
        )
    return sorted(out, key=lambda e: (e.rank is None, e.rank or 0, e.step is None, e.step or 0))
