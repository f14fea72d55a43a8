"""What ZeRO theory predicts per rank, for Ψ parameters on N ranks with Adam: the textbook
formulas, and the layout the harness' implementation really holds where it differs."""

from __future__ import annotations

from typing import Literal

Precision = Literal["fp32", "mixed"]
CATEGORIES = ("params", "grads", "optimizer")

# The harness' --precision, as the theory names it: bf16 is mixed precision.
PRECISION_OF_RUN: dict[str, Precision] = {"fp32": "fp32", "bf16": "mixed"}

# (params, grads, optimizer) bytes per parameter when nothing is sharded: fp32 Adam keeps
# 4 + 4 + 8; mixed precision keeps 2 (half weights) + 2 (half grads) + 12 (fp32 master
# weights, momentum, variance).
_STATE_BYTES = {"fp32": (4, 4, 8), "mixed": (2, 2, 12)}
# Which of the three each stage shards.
_SHARDED = {
    "ddp": (False, False, False),
    "zero1": (False, False, True),
    "zero2": (False, True, True),
    "zero3": (True, True, True),
}
# Communication volume per step, in units of Ψ elements (DDP: one all-reduce of the
# gradients; ZeRO-1/2: reduce-scatter + all-gather (or broadcast); ZeRO-3: an extra
# all-gather of the parameters in backward). One rank exchanges nothing.
VOLUME_PSI = {"ddp": 1.0, "zero1": 2.0, "zero2": 2.0, "zero3": 3.0}


def run_precision(config: dict[str, object]) -> Precision | None:
    """The theory's precision for a run record's configuration (fp32 when it does not say)."""
    return PRECISION_OF_RUN.get(str(config.get("precision", "fp32")))


def volume_psi(strategy: str, n: int | None) -> float | None:
    if strategy not in VOLUME_PSI or n is None:
        return None
    return 0.0 if n == 1 else VOLUME_PSI[strategy]


def model_state_bytes(
    strategy: str, psi: int, n: int, precision: Precision = "fp32"
) -> dict[str, float] | None:
    """The textbook ZeRO formula (Rajbhandari et al.), per category."""
    if strategy not in _SHARDED or n < 1:
        return None
    sizes = _STATE_BYTES[precision]
    return {
        name: size * psi / (n if sharded else 1)
        for name, size, sharded in zip(CATEGORIES, sizes, _SHARDED[strategy], strict=True)
    }


def layout_bytes(
    strategy: str, psi: int, n: int, precision: Precision = "fp32"
) -> dict[str, float] | None:
    """What the harness holds at its peak, where that differs from the textbook; else None.

    - DDP and ZeRO-1 in bf16 run under autocast: weights, gradients and Adam stay fp32, so the
      fp32 formula holds.
    - ZeRO-2 is FSDP2 with reshard_after_forward=False: the full parameters are out from
      forward until backward ends, and the parameter shards stay beside them (fp32: 4Ψ + 16Ψ/N;
      bf16: 2Ψ bf16 full parameters + 16Ψ/N of fp32 shards, fp32 gradients and Adam).
    - ZeRO-3 in bf16 keeps fp32 shards and fp32 gradients (FSDP2 MixedPrecisionPolicy reduces
      in fp32): 4Ψ/N + 4Ψ/N + 8Ψ/N.
    """
    if strategy not in _SHARDED or n < 1:
        return None
    if strategy == "zero2":
        full = 4 if precision == "fp32" else 2
        return {"params": full * psi + 4 * psi / n, "grads": 4 * psi / n, "optimizer": 8 * psi / n}
    if precision == "mixed":
        return model_state_bytes(strategy, psi, n, "fp32")
    return None
