"""A trace that cannot be trusted on communication says so, in every output format."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tests import tracebuild as tb
from tests.cli.run_cli import traceview
from traceview import analyze_trace


def expert_parallel(tmp_path, world=64):
    """A rank of an expert-parallel job whose all-to-alls are custom kernels: dispatch runs
    [10, 40), combine [60, 80), a GEMM [30, 70)."""
    events = [tb.step(1, 0, 100)]
    for corr, (name, ts, dur) in enumerate(
        [
            ("dpsk::ep::dispatch<8>", 10, 30),
            ("sm90_gemm_bf16", 30, 40),
            ("dpsk::ep::combine", 60, 20),
        ],
        start=1,
    ):
        events += [tb.launch(corr, corr), tb.kernel(name, ts, dur, corr, stream=7 + corr)]
    return tb.write(tmp_path / "ep.json", tb.document(events, world=world))


def test_no_communication_in_a_multi_rank_trace_names_the_likely_kernels(tmp_path):
    report = analyze_trace(expert_parallel(tmp_path))
    (note,) = [n for n in report.notes if n.caveat]
    assert note.message.startswith("world size 64 but no communication was found")
    assert "--comm-pattern" in note.message
    assert note.message.endswith(
        "(longest-running kernels that could be communication: "
        "dpsk::ep::dispatch<8> (0.030 ms), dpsk::ep::combine (0.020 ms))"
    )
    # Named, they are communication: [10,40) and [60,80), half of it behind the GEMM.
    named = analyze_trace(expert_parallel(tmp_path), comm_pattern=r"^dpsk::ep::")
    assert not any(n.caveat for n in named.notes)
    t = named.total
    assert t is not None and (t.comm_ns, t.overlap_ns) == (50_000, 20_000)


def test_a_single_rank_without_communication_is_not_a_caveat(tmp_path):
    report = analyze_trace(expert_parallel(tmp_path, world=1))
    assert not any(n.caveat for n in report.notes)


def test_without_likely_names_the_longest_kernels_are_offered(tmp_path):
    events = [tb.step(1, 0, 100), tb.launch(1, 1), tb.kernel("my_fused_kernel", 10, 50, 1)]
    report = analyze_trace(tb.write(tmp_path / "t.json", tb.document(events, world=4)))
    (note,) = [n for n in report.notes if n.caveat]
    assert note.message.endswith("(longest-running kernels: my_fused_kernel (0.050 ms))")


@pytest.mark.cli
@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_the_caveat_is_in_every_format(tmp_path, fmt):
    result = traceview("analyze", expert_parallel(tmp_path), "--format", fmt)
    assert result.code == 0
    if fmt == "json":
        (rank,) = json.loads(result.out)["ranks"]
        assert any(n["severity"] == "caveat" for n in rank["notes"])
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(result.out)))
        assert all(r["caveats"].startswith("world size 64 but no communication") for r in rows)
    else:
        assert "caveat: world size 64 but no communication was found" in result.out


@pytest.mark.cli
def test_device_work_of_an_unmodelled_accelerator_is_said_in_every_format(tmp_path):
    # CPU ops, and kernels in a category of their own (3 of them, 2 named like a collective):
    # analysed as CPU-only, but never in silence.
    events = [tb.step(1, 0, 1000), tb.cpu_op("aten::mm", 10, 100)]
    for i, name in enumerate(["npu_allreduce_ring", "npu_allreduce_ring", "fc_fwd"]):
        events.append({**tb.kernel(name, 100 + 50 * i, 20, i + 1), "cat": "npu_kernel"})
    path = tb.write(tmp_path / "npu.json", tb.document(events, world=1))
    said = (
        "3 device events of an accelerator traceview does not model (kernels in a category of "
        "their own, not Kineto's 'kernel') were left out; 2 of them are named like collectives "
        "(npu_allreduce_ring ×2): no figure here includes that device's compute or communication"
    )
    report = analyze_trace(path)
    assert report.mode == "cpu"
    assert [n.severity for n in report.notes if n.message == said] == ["caveat"]
    assert f"caveat: {said}" in traceview("analyze", path).out
    doc = json.loads(traceview("analyze", path, "--format", "json").out)
    assert said in [n["message"] for n in doc["ranks"][0]["notes"]]
    rows = list(csv.DictReader(io.StringIO(traceview("analyze", path, "--format", "csv").out)))
    assert all(said in row["caveats"] for row in rows)


def test_a_gpu_step_that_launched_no_device_work_is_noted_not_dropped_silently(tmp_path):
    # gpu_example's steps 1 and 2 launch kernels; step 3 = [200,300) launches none.
    events = [*tb.gpu_example(group=2), tb.step(3, 200, 100)]
    path = tb.write(tmp_path / "rank0.json", tb.document(events, rank=0, world=1))
    report = analyze_trace(path)
    assert [s.step for s in report.steps] == [1, 2]
    assert any(n.message.startswith("profiler step 3 launched no GPU work") for n in report.notes)
