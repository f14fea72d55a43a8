"""The overlap tax (docs/metrics.md "Overlap tax") on a hand-built trace where kernels run both
beside communication and alone, with the answers worked out by hand."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

import traceview
from tests import tracebuild as tb
from tests.cli.run_cli import traceview as cli
from tests.documents.test_schemas import validate

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def taxed_trace(tmp_path: Path) -> Path:
    """Four steps of 1000 µs. Per step, kernels (name, start, duration) and an all-reduce
    (start, duration), each launched 5 µs before it starts:
      step 1: gemm [100,140) alone; gemm [200,260) and relu [270,290) beside the all-reduce
              [190,300)
      step 2: gemm [1100,1140), gemm [1200,1240) alone; bias [1285,1305) partly beside, relu
              [1310,1330) beside the all-reduce [1300,1400)
      step 3: gemm [2100,2150) and relu [2160,2180) beside the all-reduce [2090,2200); gemm
              [2250,2290) alone
      step 4: three gemms [3100,3200) [3210,3310) [3320,3420) beside the all-reduce
              [3050,3450): gemm launched three times, where the others launched it twice."""
    steps = {
        1: ([("gemm", 100, 40), ("gemm", 200, 60), ("relu", 270, 20)], (190, 110)),
        2: ([("gemm", 1100, 40), ("gemm", 1200, 40), ("bias", 1285, 20), ("relu", 1310, 20)],
            (1300, 100)),
        3: ([("gemm", 2100, 50), ("relu", 2160, 20), ("gemm", 2250, 40)], (2090, 110)),
        4: ([("gemm", 3100, 100), ("gemm", 3210, 100), ("gemm", 3320, 100)], (3050, 400)),
    }  # fmt: skip
    events: list[tb.Event] = []
    corr = 0
    for n, (kernels, (at, dur)) in steps.items():
        events.append(tb.step(n, 1000 * (n - 1), 1000))
        for name, start, length in kernels:
            corr += 1
            events += [tb.launch(corr, start - 5), tb.kernel(name, start, length, corr=corr)]
        corr += 1
        events += [
            tb.launch(corr, at - 5),
            tb.collective(ALLREDUCE, at, dur, corr, "allreduce", (1000, 1000)),
        ]
    return tb.write(tmp_path / "rank0.json", tb.document(events))


def test_tax_worked_by_hand(tmp_path: Path) -> None:
    (rank,) = traceview.load(taxed_trace(tmp_path)).ranks
    tax = rank.overlap_tax
    assert tax is not None
    # (gemm, 1st): alone 40, 40 (steps 1, 2) -> baseline 40; beside 50 in step 3: +10.
    # (gemm, 2nd): alone 40, 40 (steps 2, 3) -> baseline 40; beside 60 in step 1: +20.
    # relu: never alone, no baseline; bias: partly beside (5 of 20 µs), neither.
    # Step 4 launched gemm three times (the others twice): not compared across steps, and the
    # trace records no launch shapes to compare it within its step.
    assert [(s.step, s.tax_ns, s.pairs) for s in tax.by_step] == [(1, 20_000, 1), (3, 10_000, 1)]
    assert (tax.tax_ns, tax.pairs, tax.kernels) == (30_000, 2, 2)
    # Beside communication: 60 + 20 (step 1), 20 (step 2), 50 + 20 (step 3), 3 × 100 (step 4)
    # = 470; 110 paired.
    assert (tax.beside_ns, tax.paired_ns) == (470_000, 110_000)
    assert tax.coverage == pytest.approx(110 / 470)
    # duration ÷ baseline: 1.5 and 1.25; every alone run is 40 µs, so its spread is 1.0.
    assert tax.slowdown == pytest.approx((1.3125, 1.375, 1.4375))
    assert tax.alone == pytest.approx((1.0, 1.0, 1.0))
    assert tax.beyond_noise


def one_step_trace(tmp_path: Path, shapes: bool = True) -> Path:
    """One step [0, 2000) µs; kernels (name, grid, start, duration), each with block
    [128, 1, 1] where `shapes`, else no launch shape; all-reduces [300, 500) and [790, 900):
      gemm, grid [8, 8, 1]: alone [100,140) [150,192) [200,238); beside [310,370) [380,430)
      gemm, grid [16, 8, 1]: [440,520), 60 of its 80 µs beside
      gemm_b, grid [4, 4, 1]: alone [600,640) [650,770); beside [800,860)"""
    kernels = [
        ("gemm", [8, 8, 1], 100, 40), ("gemm", [8, 8, 1], 150, 42), ("gemm", [8, 8, 1], 200, 38),
        ("gemm", [8, 8, 1], 310, 60), ("gemm", [8, 8, 1], 380, 50),
        ("gemm", [16, 8, 1], 440, 80),
        ("gemm_b", [4, 4, 1], 600, 40), ("gemm_b", [4, 4, 1], 650, 120),
        ("gemm_b", [4, 4, 1], 800, 60),
    ]  # fmt: skip
    events: list[tb.Event] = [tb.step(1, 0, 2000)]
    corr = 0
    for name, grid, start, length in kernels:
        corr += 1
        shape = {"grid": grid, "block": [128, 1, 1]} if shapes else {}
        events += [tb.launch(corr, start - 5), tb.kernel(name, start, length, corr=corr, **shape)]
    for at, dur in ((300, 200), (790, 110)):
        corr += 1
        events += [
            tb.launch(corr, at - 5),
            tb.collective(ALLREDUCE, at, dur, corr, "allreduce", (1000, 1000)),
        ]
    return tb.write(tmp_path / "rank0.json", tb.document(events))


@pytest.mark.parametrize("pure_python", ["0", "1"], ids=["compiled", "pure-python"])
def test_tax_within_a_step_by_launch_shape(tmp_path: Path, monkeypatch, pure_python) -> None:
    monkeypatch.setenv("TRACEVIEW_PURE_PYTHON", pure_python)
    (rank,) = traceview.load(one_step_trace(tmp_path)).ranks
    tax = rank.overlap_tax
    assert tax is not None
    # gemm [8, 8, 1]: alone 40, 42, 38 (they agree: 42 ≤ 1.5 × 38) -> baseline 40; beside 60
    # (+20) and 50 (+10). gemm [16, 8, 1]: no alone run. gemm_b: its alone runs, 40 and 120,
    # disagree (more than 1.5 times apart): other work, maybe; no baseline.
    assert [(s.step, s.tax_ns, s.pairs) for s in tax.by_step] == [(1, 30_000, 2)]
    assert (tax.tax_ns, tax.pairs, tax.kernels) == (30_000, 2, 1)
    # Beside communication: 60 + 50 + 80 + 60 = 250; 110 paired.
    assert (tax.beside_ns, tax.paired_ns) == (250_000, 110_000)
    assert tax.slowdown == pytest.approx((1.3125, 1.375, 1.4375))  # of 1.5 and 1.25
    assert tax.alone == pytest.approx((0.975, 1.0, 1.025))  # of 1.0, 1.05, 0.95
    assert tax.beyond_noise


def test_forward_launches_are_no_baseline_for_backward_ones(tmp_path: Path) -> None:
    # The same trace with the launches from 300 µs on made in the backward pass (an autograd
    # function's span holds their launches): gemm [8, 8, 1] ran alone only in the forward pass,
    # beside communication only in the backward one. A backward GEMM of one grid may be deeper
    # work: nothing is compared.
    trace = one_step_trace(tmp_path)
    document = json.loads(trace.read_text())
    document["traceEvents"].append(
        tb.cpu_op("autograd::engine::evaluate_function: MmBackward0", 290, 1000)
    )
    trace.write_text(json.dumps(document))
    (rank,) = traceview.load(trace).ranks
    assert rank.overlap_tax is not None
    assert (rank.overlap_tax.pairs, rank.overlap_tax.beside_ns) == (0, 250_000)


def test_no_tax_within_a_step_without_launch_shapes(tmp_path: Path) -> None:
    # The same kernels with no grid or block recorded: one step, nothing to compare.
    (rank,) = traceview.load(one_step_trace(tmp_path, shapes=False)).ranks
    assert rank.overlap_tax is not None
    assert (rank.overlap_tax.pairs, rank.overlap_tax.beside_ns) == (0, 250_000)
    assert rank.overlap_tax.caveat is not None and "not measured" in rank.overlap_tax.caveat


def test_no_tax_without_communication_or_on_cpu(tmp_path: Path) -> None:
    events = [tb.step(1, 0, 100), tb.launch(1, 10), tb.kernel("gemm", 20, 30, corr=1)]
    (rank,) = traceview.load(tb.write(tmp_path / "gpu.json", tb.document(events))).ranks
    assert rank.overlap_tax is not None and rank.overlap_tax.pairs == 0
    assert rank.overlap_tax.slowdown is None and not rank.overlap_tax.beyond_noise
    cpu = tb.write(tmp_path / "cpu.json", tb.document(tb.cpu_example(), backend="gloo"))
    (rank,) = traceview.load(cpu).ranks
    assert rank.overlap_tax is None


def slowed_trace(tmp_path: Path, exposed_us: int = 0) -> Path:
    """Six steps of ten 100 µs GEMM launches, back to back from 100 µs into the step; in odd
    steps launches 0-4, in even steps 5-9, run beside an all-reduce and take 150 µs. Then an
    all-reduce of `exposed_us` with no compute beside it."""
    events: list[tb.Event] = []
    corr = 0
    for n in range(1, 7):
        at = 10_000 * n
        events.append(tb.step(n, at, 10_000))
        beside = range(5) if n % 2 else range(5, 10)
        t, first = at + 100, None
        for k in range(10):
            length = 150 if k in beside else 100
            if k in beside and first is None:
                first = t
            corr += 1
            events += [tb.launch(corr, t - 50), tb.kernel("sm80_gemm", t, length, corr=corr)]
            t += length
        assert first is not None
        calls = [(first, 750)] + ([(t, exposed_us)] if exposed_us else [])
        for start, length in calls:
            corr += 1
            events += [
                tb.launch(corr, start - 50),
                tb.collective(ALLREDUCE, start, length, corr, "allreduce", (1 << 20, 1 << 20)),
            ]
    return tb.write(tmp_path / "rank0.json", tb.document(events))


def test_a_large_tax_is_a_finding(tmp_path: Path) -> None:
    # Each of the ten launches runs alone in three steps (100 µs) and beside the all-reduce in
    # three (150 µs): 5 launches a step × 50 µs = 250 µs of each 1,250 µs step, 20 %; nothing
    # is exposed, so the tax is the whole cost of communication.
    run = traceview.load(slowed_trace(tmp_path))
    (rank,) = run.ranks
    assert rank.overlap_tax is not None
    assert (rank.overlap_tax.tax_ns, rank.overlap_tax.pairs) == (6 * 250_000, 30)
    (found,) = [f for f in run.findings if f.rule == "overlap_tax"]
    assert found.numbers["slowdown"] == 1.5
    assert found.numbers["tax_ms_per_rank_step"] == 0.25
    assert found.numbers["tax_pct"] == 20.0
    assert found.numbers["exposed_ms_per_rank_step"] == 0.0
    assert "1 of 1 ranks" in found.what and "NCCL_MAX_CTAS" in found.action


def test_exposed_communication_first_where_it_costs_more(tmp_path: Path) -> None:
    # The same with a 2 ms all-reduce after the GEMMs: exposed 2 ms a step against a 0.25 ms
    # tax, 250 of 3,250 µs (7.7 %): fewer CTAs would slow the larger part.
    run = traceview.load(slowed_trace(tmp_path, exposed_us=2000))
    (found,) = [f for f in run.findings if f.rule == "overlap_tax"]
    assert found.numbers["exposed_ms_per_rank_step"] == 2.0
    assert found.numbers["tax_pct"] == pytest.approx(7.7)
    assert "shrink it first" in found.action and "NCCL_MAX_CTAS" not in found.action


def test_a_tax_within_noise_is_no_finding(tmp_path: Path) -> None:
    # The hand-worked trace: its tax is beyond noise but 30 µs of 1,100 µs steps (2.7 %) over
    # two launches: too little to advise on.
    run = traceview.load(taxed_trace(tmp_path))
    assert not [f for f in run.findings if f.rule == "overlap_tax"]


@pytest.mark.cli
def test_analyze_says_the_tax_in_every_format_and_from_a_store(tmp_path: Path) -> None:
    trace = taxed_trace(tmp_path)
    table = cli("analyze", trace).out
    assert "overlap tax: +0.030 ms (+0.007 ms a step)" in table
    assert (
        "over 2 launches of 2 kernels, 23% of the compute beside communication" in table
    )  # 110 of 470 µs
    assert "communication costs 0.275 ms over 4 steps, not the exposed 0.245 ms" in table
    (rank,) = validate("analyze", cli("analyze", trace, "--format", "json").out)["ranks"]
    assert rank["overlap_tax"]["tax_us"] == 30.0 and rank["overlap_tax"]["pairs"] == 2
    assert rank["overlap_tax"]["comm_cost_us"] == 275.0
    assert [s["overlap_tax_us"] for s in rank["steps"]] == [20.0, None, 10.0, None]
    rows = list(csv.DictReader(io.StringIO(cli("analyze", trace, "--format", "csv").out)))
    assert [r["overlap_tax_us"] for r in rows] == ["20.000", "", "10.000", "", "30.000"]
    store = tmp_path / "store"
    assert cli("ingest", trace, "--store", store).code == 0
    (stored,) = json.loads(cli("analyze", store, "--format", "json").out)["ranks"]
    assert stored["overlap_tax"] == rank["overlap_tax"]
    report = tmp_path / "report.html"
    assert cli("report", trace, "--output", report).code == 0
    assert "The overlap tax: compute slowed beside communication" in report.read_text()
