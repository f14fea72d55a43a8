"""`traceview collectives`, `ranks` and `compare` on real runs: the harness's committed CPU
sweep (sample_traces/) and the 2-rank NCCL pair of a 128-GPU job."""

import json
import statistics
from pathlib import Path

import pytest

from tests.cli.run_cli import traceview

ROOT = Path(__file__).parents[2]
SWEEP = ROOT / "sample_traces" / "cpu_sweep"
NCCL_PAIR = ROOT / "tests" / "fixtures" / "traces" / "nccl_sampled_w128"


def records():
    index = json.loads((SWEEP / "index.json").read_text())
    return {
        (r["strategy"], r["dp"]): json.loads((SWEEP / r["path"] / "run.json").read_text())
        for r in index["runs"]
    }


@pytest.mark.cli
def test_compare_a_sweep_against_the_theory():
    result = traceview("compare", SWEEP, "--format", "json")
    assert result.code == 0, result.err
    rows = {(r["strategy"], r["dp"]): r for r in json.loads(result.out)["runs"]}
    recs = records()
    assert (
        set(rows)
        == set(recs)
        == {(s, n) for s in ("ddp", "zero1", "zero2", "zero3") for n in (1, 2, 4)}
    )

    def samples_per_s(rec):
        # The median of the steps after the first that ran unprofiled.
        profiled = {p["run_step"] for p in rec["profiled_steps"]}
        plain = [t for i, t in enumerate(rec["step_seconds"]) if i and i not in profiled]
        return rec["global_batch"]["samples"] / statistics.median(plain)

    for (strategy, n), row in rows.items():
        rec = recs[(strategy, n)]
        base = samples_per_s(recs[(strategy, 1)])
        assert row["samples_per_s"] == pytest.approx(samples_per_s(rec))
        assert row["efficiency"] == pytest.approx(samples_per_s(rec) / (n * base))
        assert row["precision"] == "fp32"
        psi = rec["num_params"]
        assert row["model_state_bytes"] == max(
            sum(r["model_state_bytes"].values()) for r in rec["ranks"]
        )
        theory = {
            "ddp": 16 * psi,
            "zero1": 8 * psi + 8 * psi / n,
            "zero2": 4 * psi + 12 * psi / n,
            "zero3": 16 * psi / n,
        }[strategy]
        assert row["model_state_theory_bytes"] == pytest.approx(theory)
        if n > 1:  # one rank has nothing to exchange under FSDP
            # Message sizes per step: exactly Ψ, 2Ψ, 2Ψ, 3Ψ elements.
            assert row["comm_volume_psi"] == pytest.approx(
                {"ddp": 1, "zero1": 2, "zero2": 2, "zero3": 3}[strategy]
            )
            # On the wire: 2Ψ(N−1)/N for DDP and ZeRO-2, 3Ψ(N−1)/N for ZeRO-3; the harness's
            # ZeRO-1 (ZeroRedundancyOptimizer) adds a broadcast of Ψ to DDP's all-reduce.
            wire = {"ddp": 2, "zero1": 2, "zero2": 2, "zero3": 3}[strategy] * (n - 1) / n
            as_run = wire + 1 if strategy == "zero1" else None
            assert row["traffic_psi"] == pytest.approx(as_run or wire)
            assert row["traffic_theory_psi"] == pytest.approx(wire)
            assert row["traffic_theory_as_run_psi"] == (as_run and pytest.approx(as_run))
        else:  # nothing needs exchanging; DDP and ZeroRedundancyOptimizer still call Gloo
            assert row["comm_volume_theory_psi"] == 0
            assert row["traffic_psi"] == row["traffic_theory_psi"] == 0
        # FSDP2's ZeRO-2 keeps its parameter shards beside the full parameters: 4Ψ + 16Ψ/N.
        layout = 4 * psi + 16 * psi / n if strategy == "zero2" else None
        assert row["model_state_layout_bytes"] == (layout and pytest.approx(layout))
        assert 0 <= row["exposed_comm_fraction"] <= 1
    assert rows[("ddp", 1)]["efficiency"] == 1.0


@pytest.mark.cli
def test_compare_table_and_csv():
    table = traceview("compare", SWEEP / "ddp-dp1", SWEEP / "ddp-dp2")
    assert table.code == 0 and "E(N)" in table.out and "ddp-dp2" in table.out
    csv = traceview("compare", SWEEP, "--format", "csv")
    assert csv.out.splitlines()[0].startswith("strategy,dp,step_seconds,step_seconds_min")
    assert len(csv.out.splitlines()) == 13


@pytest.mark.cli
def test_collectives_of_a_ddp_run_name_their_buckets():
    result = traceview("collectives", SWEEP / "ddp-dp2", "--format", "json")
    assert result.code == 0, result.err
    (job,) = json.loads(result.out)["jobs"]
    buckets = json.loads((SWEEP / "ddp-dp2" / "run.json").read_text())["ddp_buckets"]
    labels = {c["label"] for c in job["calls"]}
    assert labels == {f"bucket {b['index']}" for b in buckets}
    assert job["bucket_params"]["0"] == buckets[0]["params"]
    assert job["fits_on"] == "transfer"
    for c in job["calls"]:
        assert c["wait_us"] + c["transfer_us"] == pytest.approx(c["duration_us"], abs=1e-3)
        assert 0 <= c["exposed_us"] <= c["duration_us"] + 1e-9
    assert {t["rank"] for t in job["backward_tails"]} == {0, 1}


@pytest.mark.cli
def test_collectives_of_fsdp_runs_name_their_modules():
    result = traceview("collectives", SWEEP / "zero3-dp2", "--format", "csv")
    assert result.code == 0
    assert {"blocks.0", "blocks.3", "root"} <= set(result.out.replace("\n", ",").split(","))


@pytest.mark.cli
def test_ranks_on_the_real_nccl_pair():
    result = traceview("ranks", NCCL_PAIR, "--format", "json")
    assert result.code == 0, result.err
    (job,) = json.loads(result.out)["jobs"]
    assert job["aligned"] and job["matched_collectives"] >= 4
    assert [r["rank"] for r in job["per_rank"]] == [0, 1]
    assert abs(job["per_rank"][1]["clock_offset_us"]) < 1000  # one cluster's clocks: close
    assert job["straggler"] in (0, 1, None)  # None where the two tie
    assert [s["step"] for s in job["step_skew"]] == [551, 552]


@pytest.mark.cli
def test_ranks_of_a_single_trace_says_it_needs_more():
    result = traceview("ranks", NCCL_PAIR / "rank0.json.gz")
    assert result.code == 0 and "needs two or more" in result.out


@pytest.mark.cli
def test_collectives_name_the_most_exposed_buckets_per_step():
    (job,) = json.loads(traceview("collectives", SWEEP / "ddp-dp2", "--format", "json").out)["jobs"]
    assert {(e["rank"], e["step"]) for e in job["exposed_by_step"]} == {
        (0, 2),
        (0, 3),
        (1, 2),
        (1, 3),
    }
    for entry in job["exposed_by_step"]:
        calls = [
            c for c in job["calls"] if c["rank"] == entry["rank"] and c["step"] == entry["step"]
        ]
        # The union of the calls' exposed time: their shares summed, concurrent calls once.
        assert entry["exposed_us"] == pytest.approx(sum(c["exposed_share_us"] for c in calls))
        assert entry["exposed_us"] <= sum(c["exposed_us"] for c in calls) + 1e-6
        listed = [c["exposed_us"] for c in entry["calls"]]
        assert listed == sorted(listed, reverse=True) and all(x > 0 for x in listed)


@pytest.mark.cli
@pytest.mark.parametrize("strategy", ["ddp", "zero1", "zero2", "zero3"])
def test_ranks_of_real_four_rank_runs(strategy):
    (job,) = json.loads(traceview("ranks", SWEEP / f"{strategy}-dp4", "--format", "json").out)[
        "jobs"
    ]
    assert [r["rank"] for r in job["per_rank"]] == [0, 1, 2, 3]
    assert job["matched_collectives"] > 0 and job["unmatched_calls"] == 0
    # One host: one clock, nothing to estimate.
    assert {r["clock_offset_us"] for r in job["per_rank"]} == {0.0}
    assert sum(r["last_arrivals"] for r in job["per_rank"]) == job["matched_collectives"]
    (calls,) = json.loads(
        traceview("collectives", SWEEP / f"{strategy}-dp4", "--format", "json").out
    )["jobs"]
    for c in calls["calls"]:
        assert c["wait_us"] + c["transfer_us"] == pytest.approx(c["duration_us"], abs=1e-3)


@pytest.mark.cli
def test_compare_flags_noise_in_every_format(tmp_path):
    import shutil

    for name in ("ddp-dp1", "ddp-dp2"):
        shutil.copytree(SWEEP / name, tmp_path / name)
    record = json.loads((tmp_path / "ddp-dp2" / "run.json").read_text())
    record["step_seconds"] = [1.0, 0.1, 0.6, 0.1, 0.1, 0.2, 0.2]  # measured: 0.1 0.6 0.1 0.1
    (tmp_path / "ddp-dp2" / "run.json").write_text(json.dumps(record))
    noisy = "noisy: step times vary 6.0× (0.100–0.600 s over 4 unprofiled steps)"
    table = traceview("compare", tmp_path)
    assert f"! ddp-dp2: {noisy}" in table.out
    runs = json.loads(traceview("compare", tmp_path, "--format", "json").out)["runs"]
    assert runs[1]["caveats"][0] == noisy and runs[0]["caveats"] == []
    csv = traceview("compare", tmp_path, "--format", "csv").out
    assert noisy in csv
