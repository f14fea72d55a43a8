"""Across ranks and runs, on hand-built traces whose answers are computed by hand (µs)."""

import json

import msgspec
import pytest

import traceview
from tests import tracebuild as tb
from traceview import analyze_trace
from traceview.analysis.fits import fit_alpha_beta

US = 1000


def allreduce(corr, ts, dur, seq, stream=20, nelems=1000):
    return tb.kernel(
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        ts,
        dur,
        corr,
        stream=stream,
        **{
            "Collective name": "allreduce",
            "In msg nelems": nelems,
            "Out msg nelems": nelems,
            "dtype": "Float",
            "Process Group Name": "0",
            "Seq": seq,
        },
    )


def rank_trace(tmp_path, rank, shift, arrivals, ends, host):
    """Two all-reduces; this rank's clock runs `shift` µs ahead of true time; its kernels start
    at `arrivals` and end at `ends` (true time)."""
    events = [tb.step(1, shift + 0, 1000)]
    for k, (start, end) in enumerate(zip(arrivals, ends, strict=True)):
        events += [
            tb.launch(k + 1, shift + start - 5),
            allreduce(k + 1, shift + start, end - start, seq=k),
        ]
    doc = tb.document(events, rank=rank, world=3, host_name=host)
    return tb.write(tmp_path / f"rank{rank}.json", doc)


@pytest.fixture
def job(tmp_path):
    # True time: collective 0 - ranks arrive at 100, 130, 110 and all end at 150;
    # collective 1 - arrive at 400, 380, 450, all end at 480.
    arrivals = {0: (100, 400), 1: (130, 380), 2: (110, 450)}
    shifts = {0: 0, 1: 5000, 2: -2000}
    for r in range(3):
        rank_trace(tmp_path, r, shifts[r], arrivals[r], (150, 480), f"node{r}")
    return traceview.load(tmp_path)


def test_clock_offsets_from_collective_ends(job):
    cross = job.cross_rank
    assert cross.matched == 2 and cross.unmatched == 0 and cross.reference_rank == 0
    assert [a.offset_ns for a in cross.ranks] == [0, 5000 * US, -2000 * US]
    assert [a.residual_ns for a in cross.ranks] == [0, 0, 0]


def test_wait_and_transfer_split_at_the_last_arrival(job):
    cross = job.cross_rank
    # Collective 0: last arrival 130 -> waits 30, 0, 20; transfers 20 each.
    # Collective 1: last arrival 450 -> waits 50, 70, 0; transfers 30 each.
    assert [a.wait_ns for a in cross.ranks] == [80 * US, 70 * US, 20 * US]
    assert [a.transfer_ns for a in cross.ranks] == [50 * US, 50 * US, 50 * US]
    assert [a.last_arrivals for a in cross.ranks] == [0, 1, 1]
    # One last arrival each, but rank 2's costs the others 50 + 70 µs, rank 1's 30 + 20: the
    # straggler is the rank whose lateness costs most waiting.
    assert [a.caused_wait_ns for a in cross.ranks] == [0, 50 * US, 120 * US]
    assert cross.straggler == 2


def test_the_rank_whose_lateness_costs_most_waiting_is_the_straggler(tmp_path):
    for r, arr in enumerate([(100, 400), (140, 460), (110, 420)]):
        rank_trace(tmp_path, r, 0, arr, (150, 480), f"n{r}")
    job = traceview.load(tmp_path)
    # Rank 1 arrives last at both: the others wait 40 + 30 and 60 + 40 µs for it.
    assert job.cross_rank.straggler == 1
    assert job.cross_rank.of(1).last_arrivals == 2
    assert job.cross_rank.of(1).caused_wait_ns == 170 * US


def test_two_ranks_that_cost_the_same_waiting_tie(tmp_path):
    # Collective 0: rank 1 last at 130, the others wait 30 and 20; collective 1: rank 2 last
    # at 450, the others wait 40 and 10 — 50 µs each: a tie names no rank.
    for r, arr in enumerate([(100, 410), (130, 440), (110, 450)]):
        rank_trace(tmp_path, r, 0, arr, (150, 480), f"n{r}")
    cross = traceview.load(tmp_path).cross_rank
    assert [a.caused_wait_ns for a in cross.ranks] == [0, 50 * US, 50 * US]
    assert cross.straggler is None


def test_one_host_shares_one_clock(tmp_path):
    for r, arr in enumerate([(100, 400), (130, 380), (110, 450)]):
        rank_trace(tmp_path, r, 0, arr, (150, 480 + r), "same-host")
    cross = traceview.load(tmp_path).cross_rank
    assert [a.offset_ns for a in cross.ranks] == [0, 0, 0]  # not estimated: ends differ for real
    assert [a.residual_ns for a in cross.ranks] == [0, 0.5 * US, 1 * US]


def test_step_skew(job):
    (skew,) = job.step_skew
    # Step windows (first start to last end of each rank's kernels): 380, 350, 370 µs.
    assert (skew.step, skew.shortest_ns, skew.longest_ns, skew.slowest_rank) == (
        1,
        350 * US,
        380 * US,
        0,
    )
    assert skew.skew_ns == 30 * US


def test_matching_by_order_when_no_sequence_is_recorded(tmp_path):
    def trace(rank, shift):
        events = [tb.step(1, shift, 1000)]
        for k, (start, end) in enumerate([(100, 150), (200, 260)]):
            k_ = tb.kernel(
                "ncclKernel_AllReduce_RING_LL_Sum_float",
                shift + start,
                end - start,
                k + 1,
                stream=20,
            )
            events += [tb.launch(k + 1, shift + start - 5), k_]
        return tb.write(
            tmp_path / f"r{rank}.json",
            tb.document(events, rank=rank, world=2, host_name=f"h{rank}"),
        )

    trace(0, 0), trace(1, 777)
    job = traceview.load(tmp_path)
    assert job.cross_rank.matched == 2
    assert job.cross_rank.of(1).offset_ns == 777 * US


def test_ddp_buckets_are_labelled_from_the_run_record(tmp_path):
    events = [
        tb.step(1, 0, 1000),
        tb.cpu_op("autograd::engine::evaluate_function: MmBackward0", 10, 300),
    ]
    for k, (start, nelems) in enumerate([(50, 1000), (120, 3000)]):
        events += [tb.launch(k + 1, 20 + 10 * k), allreduce(k + 1, start, 40, seq=k, nelems=nelems)]
    tb.write(tmp_path / "rank0.json", tb.document(events, rank=0, world=1))
    (tmp_path / "run.json").write_text(
        json.dumps(
            {
                "record_version": 1,
                "strategy": "ddp",
                "world_size": 1,
                "num_params": 4000,
                "config": {},
                "global_batch": {
                    "micro_batch": 1,
                    "dp": 1,
                    "grad_accum": 1,
                    "samples": 1,
                    "tokens": 8,
                },
                "ranks": [
                    {"rank": 0, "model_state_bytes": {"params": 1, "grads": 1, "optimizer": 1}}
                ],
                "ddp_buckets": [
                    {"index": 0, "bytes": 4000, "params": ["b.weight"]},
                    {"index": 1, "bytes": 12000, "params": ["a.weight", "a.bias"]},
                ],
            }
        )
    )
    job = traceview.load(tmp_path)
    assert job.calls.sort("start_ns")["bucket"].to_list() == [0, 1]
    assert job.calls["backward"].to_list() == [True, True]
    assert job.cross_rank is None  # one rank


def test_backward_tail(tmp_path):
    # Backward compute kernels run [100,160) and [170,220); the last gradient all-reduce ends
    # at 300: the tail is 300 - 220 = 80 µs.
    events = [
        tb.step(1, 0, 1000),
        tb.cpu_op("autograd::engine::evaluate_function: MmBackward0", 10, 30),
        tb.launch(1, 12),
        tb.launch(2, 14),
        tb.launch(3, 16),
        tb.kernel("sgemm", 100, 60, 1),
        tb.kernel("sgemm", 170, 50, 2),
        allreduce(3, 180, 120, seq=0),
        tb.cpu_op("aten::add", 50, 5),
        tb.launch(4, 51),
        tb.kernel("add_kernel", 310, 20, 4),
    ]
    report = analyze_trace(tb.write(tmp_path / "t.json", tb.document(events)))
    (tail,) = report.backward_tails
    assert (tail.step, tail.backward_end_ns, tail.last_gradient_comm_end_ns) == (
        1,
        220 * US,
        300 * US,
    )
    assert tail.tail_ns == 80 * US


def test_alpha_beta_fit_recovers_latency_and_bandwidth():
    import polars as pl

    sizes = [1e6, 2e6, 4e6, 8e6, 16e6, 32e6]
    alpha_ns, bw = 50_000.0, 10.0  # 50 µs, 10 GB/s = 10 bytes per ns
    calls = pl.DataFrame(
        {
            "collective": ["all_reduce"] * 6,
            "bytes": [int(s) for s in sizes],
            "dur_ns": [int(alpha_ns + s / bw) for s in sizes],
        }
    )
    fit = fit_alpha_beta(calls, "all_reduce")
    assert fit.alpha_us == pytest.approx(50.0, rel=1e-3)
    assert fit.bandwidth_gbps == pytest.approx(10.0, rel=1e-4)
    assert fit.confidence == "high" and fit.r2 == pytest.approx(1.0)
    assert fit.size_for_90pct_bytes == pytest.approx(9 * alpha_ns * bw, rel=1e-3)  # 4.5 MB
    assert fit.median_bytes == 6e6  # of 1, 2, 4, 8, 16, 32 MB
    # 6 MB = 5.7 MiB: advice is in MiB, the unit of bucket_cap_mb.
    assert "the median is 5.7 MiB: larger buckets would only start" in fit.advice
    assert fit.size_clusters == 6
    assert "larger buckets would help" in msgspec.structs.replace(fit, median_bytes=1e6).advice


def fit_of(sizes: list[float], durations: list[float], **context):
    import polars as pl

    calls = pl.DataFrame(
        {
            "collective": ["all_reduce"] * len(sizes),
            "bytes": [int(s) for s in sizes],
            "dur_ns": [int(d) for d in durations],
        }
    )
    return fit_alpha_beta(calls, "all_reduce", **context)


def test_two_size_clusters_give_no_bandwidth_and_no_size():
    # All-reduces of ~6 and ~18 MB (a DDP job's two bucket sizes, a few parameters apart): the
    # line through them is exact (α 5.7 ms, 5.5 GB/s) but rests on two points: no advice.
    sizes = [6.0e6, 6.1e6, 18.0e6, 18.2e6, 6.05e6, 18.1e6]
    fit = fit_of(sizes, [5.7e6 + s / 5.5 for s in sizes])
    assert (fit.distinct_sizes, fit.size_clusters) == (6, 2)
    assert fit.confidence == "low" and fit.r2 == pytest.approx(1.0)
    assert fit.alpha_us is None and fit.bandwidth_gbps is None  # never printed untrusted
    assert fit.size_for_90pct_bytes is None
    assert fit.advice.startswith("no recommendation (2 size clusters (sizes within 10%")


def test_the_size_never_goes_beyond_what_a_step_sends():
    # α = 50 µs at 10 GB/s: 90 % from 9 × 50 µs × 10 B/ns = 4.5 MB; a step sends 3 MB in all.
    sizes = [0.25e6, 0.5e6, 1e6, 2e6]
    fit = fit_of(sizes, [50_000 + s / 10 for s in sizes], step_bytes=3e6, step_share=0.2)
    assert fit.size_for_90pct_bytes == pytest.approx(4.5e6, rel=1e-3)
    assert fit.one_bucket
    assert "a step sends only 2.9 MiB of all_reduce: one bucket of all of it" in fit.advice


def test_no_size_for_a_collective_that_takes_under_one_percent_of_the_step():
    # Broadcasts taking 38 µs of a 215 ms step (0.018 %): the fit holds, the advice does not.
    sizes = [0.25e6, 0.5e6, 1e6, 2e6]
    fit = fit_of(sizes, [5_000 + s / 100 for s in sizes], step_share=38e3 / 215e6)
    assert fit.trusted and fit.bandwidth_gbps == pytest.approx(100, rel=1e-3)
    assert fit.size_for_90pct_bytes is None
    assert "its calls take 0.018% of the step time: not worth resizing" in fit.advice


def test_a_fit_on_durations_says_they_include_waiting():
    sizes = [1e6, 2e6, 4e6, 8e6]
    on_durations = fit_of(sizes, [50_000 + s / 10 for s in sizes], on="duration")
    assert on_durations.advice.endswith(
        "fitted on whole durations, which include waiting for late ranks: α is overstated, "
        "the bandwidth a lower bound"
    )
    assert "waiting" not in fit_of(sizes, [50_000 + s / 10 for s in sizes], on="transfer").advice


def test_alpha_beta_fit_says_when_it_cannot():
    import polars as pl

    one_size = pl.DataFrame(
        {"collective": ["all_reduce"] * 3, "bytes": [10] * 3, "dur_ns": [5, 6, 7]}
    )
    fit = fit_alpha_beta(one_size, "all_reduce")
    assert fit.confidence == "low" and fit.size_for_90pct_bytes is None
    assert fit.advice.startswith("no recommendation (1 distinct message size")


def test_alpha_beta_fit_gives_no_size_when_size_explains_little():
    import polars as pl

    sizes = [1e6, 2e6, 4e6, 1e6, 2e6, 4e6]
    noisy = [900_000, 50_000, 700_000, 80_000, 990_000, 400_000]  # durations unrelated to size
    calls = pl.DataFrame(
        {"collective": ["all_reduce"] * 6, "bytes": [int(s) for s in sizes], "dur_ns": noisy}
    )
    fit = fit_alpha_beta(calls, "all_reduce")
    assert fit.confidence == "low" and fit.size_for_90pct_bytes is None
    assert fit.advice.startswith("no recommendation (")
