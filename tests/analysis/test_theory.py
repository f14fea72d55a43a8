"""ZeRO theory per rank, from the strategy registry: the textbook formula and the layout the
harness holds, computed by hand for Ψ = 1,000 parameters."""

from __future__ import annotations

import pytest

import traceview
from traceview.analysis.theory import volume_psi

PSI = 1000


@pytest.mark.parametrize(
    ("strategy", "n", "precision", "expected"),
    [
        # fp32 AdamW: 4 + 4 + 8 bytes per parameter; each stage shards one more category.
        ("ddp", 4, "fp32", {"params": 4000, "grads": 4000, "optimizer": 8000}),
        ("zero1", 4, "fp32", {"params": 4000, "grads": 4000, "optimizer": 2000}),
        ("zero2", 4, "fp32", {"params": 4000, "grads": 1000, "optimizer": 2000}),
        ("zero3", 4, "fp32", {"params": 1000, "grads": 1000, "optimizer": 2000}),
        # mixed precision: 2 + 2 + 12 (fp32 master weights, momentum, variance).
        ("ddp", 8, "mixed", {"params": 2000, "grads": 2000, "optimizer": 12000}),
        ("zero3", 8, "mixed", {"params": 250, "grads": 250, "optimizer": 1500}),
        # One rank shards nothing away.
        ("zero3", 1, "fp32", {"params": 4000, "grads": 4000, "optimizer": 8000}),
    ],
)
def test_textbook_formula(strategy, n, precision, expected):
    assert traceview.model_state_bytes(strategy, PSI, n, precision) == expected


def test_layout_as_run_where_it_differs_from_the_textbook():
    # ZeRO-2 as FSDP2 keeps the full parameters beside fp32 shards of everything:
    # fp32, N=4: 4Ψ + 4Ψ/4 = 5000; grads 1000; optimizer 2000.
    assert traceview.layout_bytes("zero2", PSI, 4) == {
        "params": 5000,
        "grads": 1000,
        "optimizer": 2000,
    }
    # bf16: the full parameters are bf16 (2Ψ), the shards fp32.
    assert traceview.layout_bytes("zero2", PSI, 4, "mixed")["params"] == 2000 + 1000
    # DDP and ZeRO-1 under autocast keep fp32 states: the fp32 formula.
    assert traceview.layout_bytes("zero1", PSI, 4, "mixed") == traceview.model_state_bytes(
        "zero1", PSI, 4, "fp32"
    )
    # Where the textbook holds, there is no separate layout.
    assert traceview.layout_bytes("ddp", PSI, 4) is None
    assert traceview.layout_bytes("zero3", PSI, 4) is None


def test_volume_in_psi_and_none_for_what_is_not_known():
    assert [volume_psi(s, 8) for s in ("ddp", "zero1", "zero2", "zero3")] == [1, 2, 2, 3]
    assert volume_psi("zero3", 1) == 0  # one rank exchanges nothing
    assert volume_psi("unknown", 8) is None and volume_psi("ddp", None) is None
    assert traceview.model_state_bytes("pipeline", PSI, 8) is None


def test_run_precision_maps_the_harness_names():
    assert traceview.run_precision({"precision": "bf16"}) == "mixed"
    assert traceview.run_precision({}) == "fp32"  # records that do not say ran fp32
    assert traceview.run_precision({"precision": "fp8"}) is None


def test_the_harness_offers_exactly_the_registry():
    from instrumented_train.config import RunConfig
    from instrumented_train.flags import build_parser

    strategy = next(a for a in build_parser()._actions if a.dest == "strategy")
    assert tuple(strategy.choices) == tuple(traceview.STRATEGIES)
    precision = next(a for a in build_parser()._actions if a.dest == "precision")
    assert set(precision.choices) == set(traceview.strategies.PRECISION_OF_RUN)
    for name, spec in traceview.STRATEGIES.items():
        if not spec.ddp_buckets:
            with pytest.raises(ValueError, match="--bucket-cap-mb applies to ddp and zero1"):
                RunConfig(strategy=name, bucket_cap_mb=5.0)
