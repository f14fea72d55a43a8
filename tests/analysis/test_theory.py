"""ZeRO theory per rank, from the strategy registry: the textbook formula and the layout the
harness holds, computed by hand for Ψ = 1,000 parameters."""

from __future__ import annotations

import pytest

import traceview
from traceview.analysis.theory import CommTheory, comm_theory
from traceview.parse.run_record import RunFlags

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


def test_communication_in_psi_elements_as_the_zero_paper_has_it():
    # N = 8. Buffers: DDP Ψ (one all-reduce), ZeRO-1/2 Ψ + Ψ (reduce-scatter, all-gather),
    # ZeRO-3 Ψ + 2Ψ (a second all-gather in backward).
    n = 8
    volumes = [comm_theory(s, n).volume_psi for s in ("ddp", "zero1", "zero2", "zero3")]
    assert volumes == [1, 2, 2, 3]
    # Traffic: all-reduce 2(N−1)/N = 1.75; reduce-scatter and all-gather (N−1)/N = 0.875 each.
    traffic = [comm_theory(s, n).traffic_psi for s in ("ddp", "zero1", "zero2", "zero3")]
    assert traffic == pytest.approx([1.75, 1.75, 1.75, 2.625])
    # The harness's ZeRO-1 is torch's ZeroRedundancyOptimizer: DDP's all-reduce (1.75) and a
    # broadcast of every parameter from its owner (bus factor 1: 1.0).
    as_run = comm_theory("zero1", n, as_run=True)
    assert (as_run.volume_psi, as_run.traffic_psi) == pytest.approx((2.0, 2.75))
    assert comm_theory("ddp", n, as_run=True) is None  # the implementation is the textbook's


def test_one_rank_exchanges_nothing_and_unknowns_stay_unknown():
    for s in ("ddp", "zero1", "zero2", "zero3"):
        assert (comm_theory(s, 1).volume_psi, comm_theory(s, 1).traffic_psi) == (0, 0)
    # As run, DDP still all-reduces its buckets on a group of one (Ψ of buffers, nothing on
    # the wire), and ZeroRedundancyOptimizer broadcasts each parameter after it (2Ψ); FSDP2
    # runs no collective on one rank.
    assert comm_theory("ddp", 1, as_run=True) == CommTheory(volume_psi=1.0, traffic_psi=0.0)
    assert comm_theory("zero1", 1, as_run=True) == CommTheory(volume_psi=2.0, traffic_psi=0.0)
    assert comm_theory("zero2", 1, as_run=True) is None
    assert comm_theory("zero3", 1, as_run=True) is None
    assert comm_theory("unknown", 8) is None and comm_theory("ddp", None) is None
    assert traceview.model_state_bytes("pipeline", PSI, 8) is None


def test_run_precision_maps_the_harness_names():
    assert traceview.run_precision(RunFlags(precision="bf16")) == "mixed"
    assert traceview.run_precision(RunFlags()) == "fp32"  # records that do not say ran fp32
    assert traceview.run_precision(RunFlags(precision="fp8")) is None


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
