"""The data-parallel strategies, declared once: what each shards, how much it communicates,
and how the harness builds it. The harness (instrumented_train), the ZeRO theory
(analysis/theory.py) and the dashboard's memory calculator all read this table."""

from __future__ import annotations

from typing import Literal

import msgspec

Precision = Literal["fp32", "mixed"]
# What a strategy exchanges per step: (collective, message size in Ψ elements) per kind of call
# (nccl-tests sizes: an all-reduce's buffer, an all-gather's gathered output, a
# reduce-scatter's full input).
Exchange = tuple[tuple[str, float], ...]
STATE_CATEGORIES = ("params", "grads", "optimizer")

# The harness' --precision, as the theory names it: bf16 is mixed precision.
PRECISION_OF_RUN: dict[str, Precision] = {"fp32": "fp32", "bf16": "mixed"}

# (params, grads, optimizer) bytes per parameter when nothing is sharded: fp32 Adam keeps
# 4 + 4 + 8; mixed precision keeps 2 (half weights) + 2 (half grads) + 12 (fp32 master
# weights, momentum, variance).
STATE_BYTES: dict[Precision, tuple[int, int, int]] = {"fp32": (4, 4, 8), "mixed": (2, 2, 12)}


class Strategy(msgspec.Struct, frozen=True):
    name: str  # as runs and run records spell it
    title: str
    torch_feature: str  # what the harness builds it with
    wrapper: Literal["ddp", "fsdp2"]
    sharded: tuple[bool, bool, bool]  # params, grads, optimizer (STATE_CATEGORIES)
    # Communication per rank and step as the ZeRO paper has it (one rank exchanges nothing).
    exchanges: Exchange
    min_torch: tuple[int, int]
    # What the harness's implementation exchanges, where it differs from the paper.
    exchanges_as_run: Exchange | None = None
    # FSDP2 only: free the full parameters after forward (ZeRO-3) or keep them (ZeRO-2).
    reshard_after_forward: bool = False

    @property
    def ddp_buckets(self) -> bool:
        """Gradients are reduced in DDP's buckets (--bucket-cap-mb applies)."""
        return self.wrapper == "ddp"

    @property
    def shards_optimizer_only(self) -> bool:
        """ZeRO-1: DDP with the optimizer state split across ranks."""
        return self.wrapper == "ddp" and self.sharded == (False, False, True)

    @property
    def keeps_full_params(self) -> bool:
        """The full parameters stay out from forward until backward ends, beside the shards."""
        return self.wrapper == "fsdp2" and not self.reshard_after_forward


# DDP: one all-reduce of the gradients. ZeRO-1/2: a reduce-scatter of the gradients and an
# all-gather of the updated parameters. ZeRO-3: an extra all-gather of the parameters in
# backward. torch's ZeroRedundancyOptimizer (the harness's ZeRO-1) keeps DDP's all-reduce and
# then broadcasts each parameter from the rank that owns its optimizer state.
STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy(
            name="ddp",
            title="DDP",
            torch_feature="DistributedDataParallel",
            wrapper="ddp",
            sharded=(False, False, False),
            exchanges=(("all_reduce", 1.0),),
            min_torch=(1, 11),
        ),
        Strategy(
            name="zero1",
            title="ZeRO-1",
            torch_feature="DistributedDataParallel + ZeroRedundancyOptimizer",
            wrapper="ddp",
            sharded=(False, False, True),
            exchanges=(("reduce_scatter", 1.0), ("all_gather", 1.0)),
            min_torch=(1, 11),
            exchanges_as_run=(("all_reduce", 1.0), ("broadcast", 1.0)),
        ),
        Strategy(
            name="zero2",
            title="ZeRO-2",
            torch_feature="FSDP2 fully_shard per block, reshard_after_forward=False",
            wrapper="fsdp2",
            sharded=(False, True, True),
            exchanges=(("reduce_scatter", 1.0), ("all_gather", 1.0)),
            min_torch=(2, 6),
            reshard_after_forward=False,
        ),
        Strategy(
            name="zero3",
            title="ZeRO-3",
            torch_feature="FSDP2 fully_shard per block, reshard_after_forward=True",
            wrapper="fsdp2",
            sharded=(True, True, True),
            exchanges=(("reduce_scatter", 1.0), ("all_gather", 2.0)),
            min_torch=(2, 6),
            reshard_after_forward=True,
        ),
    )
}


def strategy(name: str | None) -> Strategy | None:
    """The registry's entry for a run's strategy; None for names it does not know."""
    return STRATEGIES.get(name) if name else None
