"""What ZeRO theory predicts per rank, for Ψ parameters on N ranks with Adam: the textbook
formulas, and the layout the harness' implementation really holds where it differs. What each
strategy shards and exchanges is declared in traceview/strategies.py."""

from __future__ import annotations

from traceview.strategies import (
    PRECISION_OF_RUN,
    STATE_BYTES,
    STATE_CATEGORIES,
    Precision,
    strategy,
)


def run_precision(config: dict[str, object]) -> Precision | None:
    """The theory's precision for a run record's configuration (fp32 when it does not say)."""
    return PRECISION_OF_RUN.get(str(config.get("precision", "fp32")))


def volume_psi(name: str, n: int | None) -> float | None:
    spec = strategy(name)
    if spec is None or n is None:
        return None
    return 0.0 if n == 1 else spec.volume_psi


def model_state_bytes(
    name: str, psi: int, n: int, precision: Precision = "fp32"
) -> dict[str, float] | None:
    """The textbook ZeRO formula (Rajbhandari et al.), per category."""
    spec = strategy(name)
    if spec is None or n < 1:
        return None
    sizes = STATE_BYTES[precision]
    return {
        category: size * psi / (n if sharded else 1)
        for category, size, sharded in zip(STATE_CATEGORIES, sizes, spec.sharded, strict=True)
    }


def layout_bytes(
    name: str, psi: int, n: int, precision: Precision = "fp32"
) -> dict[str, float] | None:
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
        shards = {c: b * psi / n for c, b in zip(STATE_CATEGORIES, fp32, strict=True)}
        return {**shards, "params": full * psi + shards["params"]}
    if precision == "mixed":
        return model_state_bytes(name, psi, n, "fp32")
    return None
