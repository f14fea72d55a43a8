"""What each strategy's real run writes: traces with the collectives it should, a run record,
model-state bytes that match the ZeRO formulas, and the same losses under every strategy."""

import os
import shutil

import pytest

import traceview
from tests.harness.conftest import ACTIVE_STEPS
from traceview import analyze_trace
from traceview.parse.run_record import RECORD_VERSION, read_run_record

pytestmark = pytest.mark.torchrun
N = 2
# The tiny preset at seq_len 32, by hand: token embedding 8192×128, positions 32×128, 4 blocks
# of (2 LayerNorms 2×256, qkv 128×384+384, proj 128×128+128, MLP 128×512+512 and 512×128+128
# = 198,272), final LayerNorm 256, LM head 128×8192.
TINY_PARAMS_SEQ32 = 8192 * 128 + 32 * 128 + 4 * 198_272 + 256 + 128 * 8192
STRATEGIES = ("ddp", "zero1", "zero2", "zero3")


def per_step(run, rank=0):
    """Collective type -> (calls, bytes) per profiled step, as traceview reads the trace."""
    report = analyze_trace(run.trace(rank))
    assert len(report.steps) == ACTIVE_STEPS
    return {
        c.collective: (c.count / ACTIVE_STEPS, (c.bytes or 0) / ACTIVE_STEPS)
        for c in report.collectives
    }


def test_the_sweep_writes_one_folder_per_run(strategies_w2):
    assert set(strategies_w2) == set(STRATEGIES)
    for run in strategies_w2.values():
        names = sorted(p.name for p in run.folder.iterdir())
        assert names == ["rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz", "run.json"]
        # What the sweep measured around the run: the cores, how busy others kept them.
        machine = run.record["machine"]
        assert machine["cores"] == len(os.sched_getaffinity(0))
        assert machine["other_busy_cores"] >= 0 and machine["other_busy_cores_before"] >= 0


def test_ddp_all_reduces_each_bucket_once_per_step(strategies_w2):
    run = strategies_w2["ddp"]
    buckets = run.record["ddp_buckets"]
    assert len(buckets) >= 3  # --bucket-cap-mb 1 on an 11.6 MB model
    for rank in range(N):
        counts = per_step(run, rank)
        assert set(counts) == {"all_reduce"}
        assert counts["all_reduce"] == (len(buckets), 4 * run.psi)


def test_zero1_adds_parameter_broadcasts(strategies_w2):
    run = strategies_w2["zero1"]
    counts = per_step(run)
    param_tensors = sum(len(b["params"]) for b in run.record["ddp_buckets"])
    assert counts["all_reduce"] == (len(run.record["ddp_buckets"]), 4 * run.psi)
    # ZeroRedundancyOptimizer broadcasts every parameter from the rank that owns it.
    assert counts["broadcast"] == (param_tensors, 4 * run.psi)


def test_zero2_and_zero3_reduce_scatter_and_all_gather(strategies_w2):
    units = 4 + 1  # one fully_shard per block, and the root
    zero2, zero3 = per_step(strategies_w2["zero2"]), per_step(strategies_w2["zero3"])
    assert set(zero2) == set(zero3) == {"reduce_scatter", "all_gather"}
    assert zero2["reduce_scatter"][0] == zero3["reduce_scatter"][0] == units
    assert zero2["all_gather"][0] == units  # full parameters kept from forward to backward
    assert zero3["all_gather"][0] == 2 * units  # gathered again in backward
    for counts in (zero2, zero3):
        # Sizes: each gathers and reduces the full model once per pass.
        assert counts["reduce_scatter"][1] == 4 * strategies_w2["zero2"].psi


def test_model_state_bytes_match_the_zero_formulas(strategies_w2):
    """fp32 AdamW, Ψ parameters, N = 2 ranks, bytes per rank:
    DDP 16Ψ; ZeRO-1 8Ψ + 8Ψ/N; ZeRO-2 4Ψ + 12Ψ/N; ZeRO-3 16Ψ/N.

    The tiny model's dimensions divide by N, so FSDP2 adds no padding and the formulas hold to
    the byte, with two documented extras: AdamW's `step` counter (a 4-byte tensor per parameter
    tensor held), and under ZeRO-2 the parameter shards FSDP2 keeps while the full parameters
    are out (4Ψ/N, so the measured peak is 4Ψ + 16Ψ/N). ZeroRedundancyOptimizer partitions whole
    parameters, so its ranks differ by less than the largest parameter's optimizer state."""
    tensors = sum(len(b["params"]) for b in strategies_w2["ddp"].record["ddp_buckets"])
    steps = 4 * tensors  # AdamW step counters, one per parameter tensor (every rank under FSDP)
    for name, run in strategies_w2.items():
        psi = run.psi
        expected = {
            "ddp": {"params": 4 * psi, "grads": 4 * psi, "optimizer": 8 * psi + steps},
            "zero2": {
                "params": 4 * psi + 4 * psi // N,
                "grads": 4 * psi // N,
                "optimizer": 8 * psi // N + steps,
            },
            "zero3": {
                "params": 4 * psi // N,
                "grads": 4 * psi // N,
                "optimizer": 8 * psi // N + steps,
            },
        }
        measured = [r["model_state_bytes"] for r in run.record["ranks"]]
        if name == "zero1":
            assert all(m["params"] == 4 * psi and m["grads"] == 4 * psi for m in measured)
            assert sum(m["optimizer"] for m in measured) == 8 * psi + steps
            largest = max(8 * 8192 * 128, 8 * 128 * 512)  # token embedding / MLP weight, 8 B/elem
            assert all(abs(m["optimizer"] - 8 * psi / N) < largest for m in measured)
        else:
            assert measured == [expected[name]] * N, name


def test_losses_agree_across_strategies(strategies_w2):
    """Same seed, same data per rank, same math: the strategies differ only in rounding."""
    for rank in range(N):
        reference = strategies_w2["ddp"].record["ranks"][rank]["losses"]
        assert len(reference) == 2 + 0 + 1 + ACTIVE_STEPS
        for name in STRATEGIES:
            losses = strategies_w2[name].record["ranks"][rank]["losses"]
            assert losses == pytest.approx(reference, rel=1e-5), name


def test_run_record(strategies_w2):
    for name, run in strategies_w2.items():
        rec = run.record
        assert (rec["strategy"], rec["world_size"], rec["backend"]) == (name, N, "gloo")
        assert rec["num_params"] == TINY_PARAMS_SEQ32
        assert rec["config"]["strategy"] == name and rec["torch_version"].startswith("2.")
        assert rec["global_batch"] == {
            "micro_batch": 2,
            "dp": N,
            "grad_accum": 1,
            "samples": 4,
            "tokens": 128,
        }
        assert len(rec["step_seconds"]) == 5 and all(t > 0 for t in rec["step_seconds"])
        assert [s["profiler_step"] for s in rec["profiled_steps"]] == [1, 2]
        tput = rec["throughput"]
        assert tput["samples_per_s"] == pytest.approx(4 / tput["step_seconds"])
        assert tput["tokens_per_s"] == pytest.approx(128 / tput["step_seconds"])
        assert rec["profiler_overhead"]["ratio"] > 0
        assert rec["hosts"] and len(rec["ranks"]) == N
        for r in rec["ranks"]:
            assert r["peak_memory"]["kind"] == "process_peak_rss" and r["peak_memory"]["bytes"] > 0
            assert set(r["model_state_bytes_by_phase"]) == {
                "after_forward",
                "after_backward",
                "after_step",
            }
        if name in ("ddp", "zero1"):
            params = [p for b in rec["ddp_buckets"] for p in b["params"]]
            assert len(params) == len(set(params))  # every parameter in exactly one bucket
            assert sum(b["bytes"] for b in rec["ddp_buckets"]) == 4 * rec["num_params"]
        else:
            assert rec["ddp_buckets"] is None


def test_profiled_steps_line_up_with_the_traces(strategies_w2):
    run = strategies_w2["ddp"]
    report = analyze_trace(run.trace(0))
    assert [s.step for s in report.steps] == [
        s["profiler_step"] for s in run.record["profiled_steps"]
    ]
    assert (report.rank, report.world_size, report.backend) == (0, N, "gloo")


def test_each_trace_carries_its_run_and_traceview_reads_it(strategies_w2):
    for name, run in strategies_w2.items():
        for rank in range(N):
            said = analyze_trace(run.trace(rank)).run
            assert said is not None and said.record_version == RECORD_VERSION
            assert (said.strategy, said.world_size, said.config.seq_len) == (name, N, 32)
        # Carried away from its folder (no run.json beside it), a trace still names its run.
        alone = run.folder.parent / f"{name}-alone"
        alone.mkdir()
        shutil.copy(run.trace(0), alone)
        assert traceview.load(alone).strategy == name


def test_the_run_record_is_the_one_schema_traceview_reads(strategies_w2):
    # run.json is written from traceview's own structs and read back whole, version included.
    for name, run in strategies_w2.items():
        record = read_run_record(run.folder)
        assert record is not None and record.record_version == RECORD_VERSION
        assert record.strategy == name and record.config.seq_len == 32
        assert [r.rank for r in record.ranks] == list(range(N))
        assert all(r.peak_memory is not None and r.peak_memory.bytes > 0 for r in record.ranks)


def test_gradient_accumulation_syncs_once_per_optimizer_step(accumulating_w2):
    ddp = accumulating_w2["ddp"]
    assert ddp.record["global_batch"]["samples"] == 2 * N * 2
    assert per_step(ddp)["all_reduce"][0] == len(ddp.record["ddp_buckets"])  # not twice that
    zero2 = per_step(accumulating_w2["zero2"])
    assert zero2["reduce_scatter"][0] == 5  # one per FSDP unit, on the last micro-step only
