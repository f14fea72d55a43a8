"""What ZeRO theory predicts per rank, for Ψ parameters on N ranks with Adam."""

from __future__ import annotations

from typing import Literal

Precision = Literal["fp32", "mixed"]

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
# all-gather of the parameters in backward).
VOLUME_PSI = {"ddp": 1.0, "zero1": 2.0, "zero2": 2.0, "zero3": 3.0}


def model_state_bytes(
    strategy: str, psi: int, n: int, precision: Precision = "fp32"
) -> dict[str, float] | None:
    if strategy not in _SHARDED or n < 1:
        return None
    sizes = _STATE_BYTES[precision]
    return {
        name: size * psi / (n if sharded else 1)
        for name, size, sharded in zip(
            ("params", "grads", "optimizer"), sizes, _SHARDED[strategy], strict=True
        )
    }
