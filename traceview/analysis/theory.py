"""What ZeRO theory predicts per rank, for Ψ parameters on N ranks with Adam: the textbook
formulas, and the layout the harness' implementation really holds where it differs. What each
strategy shards and exchanges is declared in traceview/strategies.py."""

from __future__ import annotations

import msgspec

from traceview.analysis.calls import traffic_factor
from traceview.parse.run_record import RunFlags
from traceview.strategies import (
    PRECISION_OF_RUN,
    STATE_BYTES,
    STATE_CATEGORIES,
    Precision,
    strategy,
)


def run_precision(config: RunFlags) -> Precision | None:
    """The theory's precision for a run record's configuration (fp32 when it does not say)."""
    return PRECISION_OF_RUN.get(config.precision)


class CommTheory(msgspec.Struct, frozen=True, kw_only=True):
    """What a strategy exchanges per rank and step, in Ψ parameter elements."""

    volume_psi: float  # Σ message sizes (nccl-tests sizes): DDP Ψ, ZeRO-1/2 2Ψ, ZeRO-3 3Ψ
    traffic_psi: float  # Σ size × bus factor: 2Ψ(N−1)/N for DDP and ZeRO-1/2, 3Ψ(N−1)/N ZeRO-3


def comm_theory(name: str, n: int | None, *, as_run: bool = False) -> CommTheory | None:
    """The ZeRO paper's communication for `name` on N ranks, or (`as_run`) what the harness's
    implementation exchanges where it differs (None where it does not). One rank exchanges
    nothing; but DDP (and torch's ZeroRedundancyOptimizer over it) still reduces its buckets
    on a group of one: its buffers are there, as run, and nothing goes on the wire."""
    spec = strategy(name)
    if spec is None or n is None or n < 1:
        return None
    if n == 1:
        if not as_run:
            return CommTheory(volume_psi=0.0, traffic_psi=0.0)
        if not spec.ddp_buckets:  # FSDP2 runs no collective on one rank
            return None
        run = spec.exchanges_as_run or spec.exchanges
        return CommTheory(volume_psi=sum(size for _, size in run), traffic_psi=0.0)
    exchanges = spec.exchanges_as_run if as_run else spec.exchanges
    if exchanges is None:
        return None
    return CommTheory(
        volume_psi=sum(size for _, size in exchanges),
        traffic_psi=sum(size * (traffic_factor(c, n) or 0.0) for c, size in exchanges),
    )


def model_state_bytes(
    name: str, psi: int, n: int, precision: Precision = "fp32"
) -> dict[str, int] | None:
    """The textbook ZeRO formula (Rajbhandari et al.), per category, in whole bytes: a sharded
    category's share rounded up (the largest rank's, where Ψ does not divide by N)."""
    spec = strategy(name)
    if spec is None or n < 1:
        return None
    sizes = STATE_BYTES[precision]
    return {
        category: _share(size * psi, n if sharded else 1)
        for category, size, sharded in zip(STATE_CATEGORIES, sizes, spec.sharded, strict=True)
    }


def _share(total: float, n: int) -> int:
    return -(-round(total) // n)  # ceil, in integers: exact for any Ψ


def layout_bytes(
    name: str, psi: int, n: int, precision: Precision = "fp32"
) -> dict[str, int] | None:
    """What the harness holds at its peak, where that differs from the textbook; else None.

    - A strategy that keeps the full parameters from forward until backward ends (ZeRO-2 as
      FSDP2 with reshard_after_forward=False) holds them beside the parameter shards (fp32:
      4Ψ + 16Ψ/N; bf16: 2Ψ bf16 full parameters + 16Ψ/N of fp32 shards, gradients and Adam).
    - In bf16 the states themselves stay fp32: DDP and ZeRO-1 run under autocast, and FSDP2's
      MixedPrecisionPolicy keeps fp32 shards and reduces gradients in fp32. The fp32 formula
      holds.
    """
    spec = strategy(name)
    if spec is None or n < 1:
        return None
    if spec.keeps_full_params:
        # FSDP2 shards every state in fp32; the full parameters come on top.
        full = 4 if precision == "fp32" else 2
        fp32 = STATE_BYTES["fp32"]
        shards = {c: _share(b * psi, n) for c, b in zip(STATE_CATEGORIES, fp32, strict=True)}
        return {**shards, "params": full * psi + shards["params"]}
    if precision == "mixed":
        return model_state_bytes(name, psi, n, "fp32")
    return None
