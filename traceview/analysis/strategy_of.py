"""Which data-parallel strategy a job ran: what its run record says, else what its traces say
of their run, else what the traces show — FSDP's all-gathers in backward or not (ZeRO-3 or
ZeRO-2), ZeroRedundancyOptimizer's step (ZeRO-1), DDP's forward or its gradient all-reduces in
backward (DDP) — said as inferred, with what it rests on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec
import polars as pl

from traceview.analysis.rank import RankReport

Source = Literal["run record", "trace metadata", "inferred", "unknown"]


class StrategyOf(msgspec.Struct, frozen=True, kw_only=True):
    name: str | None  # as traceview.STRATEGIES names it; None when nothing tells
    source: Source
    evidence: str = ""  # what an inference rests on, in words

    @property
    def said(self) -> str:
        """The strategy as outputs show it: "zero3", "zero3 (inferred)", "unknown"."""
        if self.name is None:
            return "unknown"
        return f"{self.name} (inferred)" if self.source == "inferred" else self.name


UNKNOWN = StrategyOf(name=None, source="unknown")


def infer_strategy(ranks: Sequence[RankReport], calls: pl.DataFrame) -> StrategyOf:
    """From the wrappers' record functions in the traces and the job's collective calls
    (analysis/job.py's calls: collective, backward, module)."""
    wrappers = {w for r in ranks for w in r.wrappers}
    n = len(ranks)
    of = f"{n} rank trace{'s' if n != 1 else ''}"
    fsdp = "fsdp2" if "fsdp2" in wrappers else "fsdp1" if "fsdp1" in wrappers else None
    if fsdp is None and calls["module"].is_not_null().any():
        fsdp = "fsdp2"
    if fsdp is not None:
        return _fsdp(fsdp.upper(), calls, of)
    if "zero_redundancy_optimizer" in wrappers:
        broadcasts = int((calls["collective"] == "broadcast").sum())
        return StrategyOf(
            name="zero1",
            source="inferred",
            evidence=f"torch's ZeroRedundancyOptimizer steps in the {of} ({broadcasts} parameter "
            "broadcasts from their owners)",
        )
    gradient = calls.filter(pl.col("backward") & (pl.col("collective") == "all_reduce")).height
    if "ddp" in wrappers:
        seen = f", {gradient} gradient all-reduces in backward" if gradient else ""
        return StrategyOf(
            name="ddp",
            source="inferred",
            evidence=f"DistributedDataParallel's forward in the {of}{seen}",
        )
    if gradient:
        return StrategyOf(
            name="ddp",
            source="inferred",
            evidence=f"{gradient} all-reduces launched from the backward pass in the {of}, as "
            "DDP's gradient hooks launch them (no other wrapper seen)",
        )
    return UNKNOWN


def _fsdp(which: str, calls: pl.DataFrame, of: str) -> StrategyOf:
    gathers = calls.filter(pl.col("collective") == "all_gather")
    again = int(gathers["backward"].sum())
    if gathers.height == 0:
        return StrategyOf(
            name=None,
            source="inferred",
            evidence=f"{which} in the {of}, but no all-gathers to tell ZeRO-2 from ZeRO-3",
        )
    if again:
        return StrategyOf(
            name="zero3",
            source="inferred",
            evidence=f"{which} all-gathers the parameters again in backward ({again} of "
            f"{gathers.height} all-gathers in the {of}): resharded after forward",
        )
    return StrategyOf(
        name="zero2",
        source="inferred",
        evidence=f"{which} all-gathers the parameters in forward only ({gathers.height} in the "
        f"{of}) and keeps them for backward",
    )
