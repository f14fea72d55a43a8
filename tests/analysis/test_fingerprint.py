"""Like with like (docs/metrics.md "Like with like"): Ψ from the traces' gradients, and E(N)
only between runs of one model — on a folder holding a harness sweep and a user's own job."""

from __future__ import annotations

import pytest

import traceview
from tests import tracebuild as tb
from tests.analysis.test_bucket_findings import embedding_last
from traceview.analysis.fingerprint import fingerprint
from traceview.analysis.gradients import GradientStep


def users_job(root):
    """A 2-rank DDP job of the user's own, no run record: each rank's step makes two gradients
    ready, 256 × 256 and 16,384 × 1,024 floats (Ψ = 65,536 + 16,777,216 = 16,842,752), and
    all-reduces 1 + 65 MiB of them."""
    folder = root / "my-job"
    folder.mkdir()
    for rank in (0, 1):
        tb.write(folder / f"rank{rank}.json", tb.document(embedding_last(), rank=rank, world=2))
    return folder


def test_the_parameters_are_read_from_the_gradients_of_one_backward_pass(tmp_path):
    job = traceview.load(users_job(tmp_path)).report
    assert job.ranks[0].gradients == (
        GradientStep(step=1, gradients=2, passes=1, bytes=4 * 16_842_752, elements=16_842_752,
                     last_bytes=64 << 20),
    )  # fmt: skip
    model = fingerprint(job)
    assert (model.params, model.params_from, model.gradients) == (16_842_752, "traces", 2)
    assert model.said == "16,842,752 parameters (from the traces)"


def test_two_backward_passes_in_a_step_count_once(tmp_path):
    # Gradient accumulation: the same two gradients made ready twice in the step.
    events = [
        tb.step(1, 0, 1000),
        tb.gradient_ready(100, [4, 8]), tb.gradient_ready(110, [8]),
        tb.gradient_ready(300, [4, 8]), tb.gradient_ready(310, [8]),
        tb.cpu_op("aten::mm", 20, 50),
    ]  # fmt: skip
    folder = tmp_path / "acc"
    folder.mkdir()
    tb.write(folder / "rank0.json", tb.document(events, rank=0, world=1, backend="gloo"))
    (step,) = traceview.load(folder).report.ranks[0].gradients
    assert (step.gradients, step.passes, step.elements) == (2, 2, 40)


def test_e_n_is_only_set_against_a_dp_1_run_of_the_same_model(tmp_path):
    # The harness sweep (Ψ = tracebuild.PSI = 1,000 in its run records) and the user's job,
    # inferred DDP at DP 2, whose traces say 16,842,752: not the sweep's model.
    one = tb.run_folder(tmp_path, "ddp-dp1", steps=[9.0, 1e-4, 1e-4])
    two = tb.run_folder(tmp_path, "ddp-dp2", dp=2, steps=[9.0, 1.2e-4, 1.2e-4])
    mine = users_job(tmp_path)
    rows = {r.job.rsplit("/", 1)[-1]: r for r in traceview.load_runs([one, two, mine]).scaling()}
    assert rows["ddp-dp2"].efficiency == pytest.approx(1e-4 / 1.2e-4)
    assert rows["my-job"].strategy == "ddp" and rows["my-job"].efficiency is None
    assert (
        "no E(N): the ddp DP-1 run among the inputs is of another model (1,000 parameters "
        "(run record); this run: 16,842,752 parameters (from the traces))"
    ) in rows["my-job"].caveats
    # Its buffers per step in Ψ from the traces: (1 + 65) MiB of floats = 17,301,504
    # elements a rank and step, over 16,842,752.
    assert rows["my-job"].comm_volume_psi == pytest.approx(17_301_504 / 16_842_752)
    assert any(c.startswith("Ψ = 16,842,752 from the traces") for c in rows["my-job"].caveats)


def test_without_a_record_or_shapes_the_unknown_per_psi_figures_say_why(tmp_path):
    folder = tmp_path / "no-shapes"
    folder.mkdir()
    tb.write(folder / "rank0.json", tb.document(tb.gpu_example(group=2), rank=0, world=2))
    (row,) = traceview.load_runs([folder]).scaling()
    assert row.comm_volume_psi is None and row.traffic_psi is None
    assert any(c.startswith("traffic and buffers per Ψ unknown") for c in row.caveats)
