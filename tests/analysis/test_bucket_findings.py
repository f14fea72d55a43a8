"""The bucket rules (docs/findings.md "backward_tail", "small_buckets", "waiting"): what the last
bucket holds, its floor, advice that rests on transfer and never says two opposite things.
Hand-built DDP traces; the numbers are worked out by hand beside each."""

from __future__ import annotations

from pathlib import Path

import traceview
from tests import tracebuild as tb

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
BACKWARD = "autograd::engine::evaluate_function: AddmmBackward0"
MIB = 1 << 20


def nccl(ts: float, dur: float, corr: int, seq: int, nbytes: int, dtype: str = "Float"):
    size = 2 if dtype == "BFloat16" else 4
    return tb.kernel(
        ALLREDUCE, ts, dur, corr=corr, stream=20,
        **{"Collective name": "allreduce", "In msg nelems": nbytes // size,
           "Out msg nelems": nbytes // size, "dtype": dtype, "Process Group Name": "0",
           "Seq": seq},
    )  # fmt: skip


def write_job(tmp_path: Path, ranks: dict[int, list[tb.Event]]) -> Path:
    folder = tmp_path / "job"
    folder.mkdir(parents=True)
    for rank, events in ranks.items():
        tb.write(folder / f"rank{rank}.json", tb.document(events, rank=rank, world=len(ranks)))
    return folder


def embedding_last(*, dtype: str = "Float", last_grad: list[int] | None = None) -> list[tb.Event]:
    """Step 1 = [0,2000) µs. Backward [100,600) on the CPU computes on the GPU [150,600) and makes
    two gradients ready: a 256 × 256 one (256 KiB) at 300 and, last, a 16,384 × 1,024 one
    (64 MiB: the embedding) at 590. Bucket 0 (1 MiB) reduces at [350,450) under compute; the
    last bucket — 65 MiB: the embedding and 1 MiB of others — at [600,1250), after backward:
    650 µs exposed."""
    shape = last_grad or [16_384, 1_024]
    return [
        tb.step(1, 0, 2000),
        tb.cpu_op(BACKWARD, 100, 500),
        tb.gradient_ready(300, [256, 256]),
        tb.gradient_ready(590, shape),
        tb.launch(1, 110),
        tb.launch(2, 300),
        tb.launch(3, 595),
        tb.kernel("volta_sgemm_128x64_nt", 150, 450, corr=1),
        nccl(350, 100, corr=2, seq=1, nbytes=MIB, dtype=dtype),
        nccl(600, 650, corr=3, seq=2, nbytes=65 * MIB, dtype=dtype),
    ]


def tail_of(folder: Path) -> tb.Event:
    (found,) = [f for f in traceview.load(folder).findings if f.rule == "backward_tail"]
    return found


def test_a_last_bucket_of_one_large_gradient_is_a_tail_no_cap_shortens(tmp_path):
    found = tail_of(write_job(tmp_path, {0: embedding_last()}))
    # 650 µs of the step window [150,1250) = 1,100 µs exposed, all after backward. The last
    # gradient is 64 of the last bucket's 65 MiB (98.5 %): its own reduce at the bucket's rate
    # is 650 × 64 / 65 = 640 µs, the floor; the tail is within 20 % of it.
    assert found.numbers == {
        "tail_exposed_ms_per_step": 0.65, "tail_share_pct": 100.0, "step_time_share_pct": 59.1,
        "last_bucket_mib": 65.0, "last_gradient_mib": 64.0, "last_gradient_share_pct": 98.5,
        "floor_ms_per_step": 0.64, "floor_on": "duration", "rank_steps": 1,
        "strategy": "ddp", "strategy_source": "inferred",
    }  # fmt: skip
    assert "is 98% one gradient of 64.0 MiB, the last made ready" in found.what
    assert "DDP never splits a tensor" in found.what and "the tail is at its floor" in found.what
    # Advice that would help: never a lower cap; the 32-bit messages may go in bf16.
    assert "lower bucket_cap_mb" not in found.action
    assert found.action.startswith("the tail is at its floor, which no bucket_cap_mb shortens")
    assert "bf16_compress_hook" in found.action and "sparse=True" in found.action


def test_a_job_already_reducing_in_bf16_is_not_told_to(tmp_path):
    found = tail_of(write_job(tmp_path, {0: embedding_last(dtype="BFloat16")}))
    assert found.numbers["last_gradient_share_pct"] == 98.5
    assert "bf16_compress_hook" not in found.action and "sparse=True" in found.action


def test_a_tail_above_its_floor_of_many_small_gradients_is_told_to_lower_the_cap(tmp_path):
    # The last gradient is 4 MiB (1,024 × 1,024) of 65: its floor 650 × 4 / 65 = 40 µs, far
    # below the 650 µs tail: a lower cap can send most of the bucket while backward computes.
    found = tail_of(write_job(tmp_path, {0: embedding_last(last_grad=[1_024, 1_024])}))
    assert found.numbers["last_gradient_share_pct"] == round(100 * 4 / 65, 1)
    assert found.numbers["floor_ms_per_step"] == 0.04
    assert "the tail's floor is about 0.04 ms" in found.what
    assert "at its floor" not in found.what
    assert "a lower bucket_cap_mb" in found.action


def sized_with_tail() -> list[tb.Event]:
    """Step 1 = [0,10000) µs. Backward [0,3100) on the CPU; compute [50,2000) on the GPU.
    All-reduces of 10, 20, 40 and 80 KB at 100, 1100, 2100 and 3100 µs, each α = 50 µs +
    1 µs a KB (60, 70, 90, 130 µs): the last two, 220 µs, after compute ended, exposed."""
    events: list[tb.Event] = [
        tb.step(1, 0, 10_000),
        tb.cpu_op(BACKWARD, 0, 3100),
        tb.launch(99, 10),
        tb.kernel("volta_sgemm_128x64_nt", 50, 1950, corr=99),
    ]
    t = 100.0
    for i, kb in enumerate([10, 20, 40, 80]):
        events += [tb.launch(i + 1, t - 50), nccl(t, 50 + kb, i + 1, i + 1, kb * 1000)]
        t += 1000
    return events


def test_smaller_and_larger_buckets_are_never_advised_together(tmp_path):
    found = traceview.load(write_job(tmp_path, {0: sized_with_tail()})).findings
    # The α-β fit says larger buckets (90 % of the bandwidth from 450 KB; median 30 KB), the
    # tail smaller: 220 µs of the window [50,3230) = 3,180 µs (6.9 %) exposed after backward.
    # The tail is said, measured; its advice is not a lower cap, and no finding says larger.
    (tail,) = [f for f in found if f.rule in ("backward_tail", "small_buckets")]
    assert tail.rule == "backward_tail"
    assert tail.numbers["step_time_share_pct"] == 6.9
    assert "a lower bucket_cap_mb would cost in transfer what it hides" in tail.action
    assert "larger buckets" not in tail.action


def waiting_job(tmp_path: Path) -> Path:
    """Two ranks, step 1 = [0,2000) µs, backward [100,600) on the CPU. Bucket 0 reduces at
    [430,450) on both. Rank 0 computes until 600 and arrives at the last bucket at 600; rank 1
    computes until 840 and arrives at 840; both end at 900. Rank 0 waits 240 of its 300 µs."""
    ranks = {}
    for rank, (compute_end, arrive) in enumerate([(600, 600), (840, 840)]):
        ranks[rank] = [
            tb.step(1, 0, 2000),
            tb.cpu_op(BACKWARD, 100, 500),
            tb.launch(1, 110), tb.launch(2, 300), tb.launch(3, 390),
            tb.kernel("volta_sgemm_128x64_nt", 150, compute_end - 150, corr=1),
            nccl(430, 20, corr=2, seq=1, nbytes=MIB),
            nccl(arrive, 900 - arrive, corr=3, seq=2, nbytes=MIB),
        ]  # fmt: skip
    return write_job(tmp_path, ranks)


def test_waiting_for_a_late_rank_withholds_bucket_advice(tmp_path):
    found = traceview.load(waiting_job(tmp_path)).findings
    # The gradient collectives take 20 + 300 + 20 + 60 = 400 µs, 240 of it rank 0 waiting for
    # rank 1 (60 %): no bucket rule, however exposed rank 0's tail; rank 1 is the finding.
    assert [f.rule for f in found] == ["straggler"]
    (late,) = found
    assert late.numbers["rank"] == 1 and late.numbers["caused_wait_ms"] == 0.24
    assert "bucket advice is withheld: 60% of the gradient collectives' time is waiting" in (
        late.action
    )


def test_a_last_bucket_mostly_one_gradient_but_above_its_floor_says_how_far(tmp_path):
    # The last gradient is 10,240 × 1,024 floats, 40 MiB of the 65 (61.5 %): one tensor is
    # most of the bucket, its floor 650 × 40 / 65 = 400 µs; the tail, 650, is 250 above it.
    found = tail_of(write_job(tmp_path, {0: embedding_last(last_grad=[10_240, 1_024])}))
    assert found.numbers["last_gradient_share_pct"] == 61.5
    assert found.numbers["floor_ms_per_step"] == 0.4
    assert found.action.startswith(
        "no bucket_cap_mb shortens the last gradient's own reduce (a lower cap could at most "
        "take the tail down to it, 0.25 ms less); what does: reduce in bf16"
    )


def test_without_shapes_an_outsized_last_bucket_is_not_simply_told_to_shrink(tmp_path):
    # The same job profiled without record_shapes: what the 65 MiB bucket holds is unknown,
    # but it is 65× the step's other bucket (1 MiB), out of line with any cap that made both.
    events = [e for e in embedding_last() if e["name"] != "torch::autograd::AccumulateGrad"]
    found = tail_of(write_job(tmp_path, {0: events}))
    assert found.numbers["last_bucket_mib"] == 65.0
    assert found.numbers["largest_other_bucket_mib"] == 1.0
    assert "65× the step's largest other (no gradient shapes recorded)" in found.what
    assert found.action.startswith("a bucket this far above the others may hold one gradient")
    assert "record_shapes=True" in found.action
