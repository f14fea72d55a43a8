"""scripts/gpu_check.sh, the GPU acceptance check: its refusal without a GPU, and its checks,
run here on what a machine without a GPU has — the CPU sample sweep, which fails the GPU checks
and passes the others, real NCCL traces, which pass the kernel checks, and the sweep the check
itself made on a GPU (tests/fixtures/gpu_sweep), which passes every one."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import traceview

ROOT = Path(__file__).parents[1]
spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
assert spec is not None and spec.loader is not None
gpu_check = importlib.util.module_from_spec(spec)
sys.modules["gpu_check"] = gpu_check
spec.loader.exec_module(gpu_check)


@pytest.mark.cli
def test_without_a_gpu_it_says_so_in_one_line_and_exits_0(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the check would run")
    done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith("gpu_check: no GPU here (torch ") and "nothing to check" in line
    assert list(tmp_path.iterdir()) == []  # nothing run, nothing written


def test_a_gpu_host_with_a_cpu_build_of_torch_fails_saying_so(tmp_path, monkeypatch, capsys):
    # The driver's folder as it lists two GPUs; torch here is a CPU build, as on such a host.
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine's torch sees its GPU")
    for gpu in ("0000:17:00.0", "0000:65:00.0"):
        (tmp_path / "driver" / gpu).mkdir(parents=True)
    monkeypatch.setattr(gpu_check, "DRIVER_GPUS", tmp_path / "driver")
    assert gpu_check.main(["--out", str(tmp_path / "out")]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("gpu_check: the driver lists 2 GPUs, but torch ")
    assert "sees no CUDA device: install a CUDA build of torch" in line
    assert not (tmp_path / "out").exists()


def test_it_says_what_it_did_not_check():
    one, two = gpu_check.not_checked(1), gpu_check.not_checked(2)
    assert any(w.startswith("NCCL collectives, DDP buckets and FSDP modules") for w in one)
    assert not any(w.startswith("NCCL") for w in two)
    assert all(any(w.startswith("model states against the CUDA allocator") for w in said)
               for said in (one, two))  # fmt: skip


def test_the_dp_degrees_are_the_powers_of_two_the_gpus_allow():
    assert [gpu_check.degrees(n) for n in (1, 2, 3, 6, 8)] == [
        [1], [1, 2], [1, 2], [1, 2, 4], [1, 2, 4, 8]
    ]  # fmt: skip


def checks(path: Path) -> dict[tuple[str, str], object]:
    return {(c.run, c.what): c for c in gpu_check.run_checks(traceview.load_runs([path]))}


def test_cpu_runs_fail_the_gpu_checks_and_pass_the_others():
    found = checks(ROOT / "sample_traces" / "cpu_sweep")
    kernels = found[("ddp-dp2", "CUDA kernels")]
    assert not kernels.ok and "ranks read as cpu" in kernels.detail
    nccl = found[("ddp-dp2", "NCCL collectives, sizes and groups")]
    assert not nccl.ok and "on GPU streams: False, every size and group known: True" in nccl.detail
    for run in ("ddp-dp2", "zero1-dp2", "zero2-dp4", "zero3-dp4"):
        assert found[(run, "steps and overlap")].ok
        assert found[(run, "model states vs ZeRO")].ok, found[(run, "model states vs ZeRO")]
        assert found[(run, "profiler overhead")].ok
    assert found[("ddp-dp2", "DDP buckets")].ok and found[("zero3-dp2", "FSDP modules")].ok
    # At DP 1 nothing is exchanged: no collective or bucket check.
    assert ("ddp-dp1", "DDP buckets") not in found
    # The tiny model's ZeRO-3 shards hold the formula to the byte (tests/harness/test_runs.py).
    assert "(+0.0%" in found[("zero3-dp4", "model states vs ZeRO")].detail


def test_real_nccl_traces_pass_the_kernel_checks():
    found = checks(ROOT / "tests" / "fixtures" / "traces" / "nccl_sampled_w128")
    assert found[("nccl_sampled_w128", "CUDA kernels")].ok
    nccl = found[("nccl_sampled_w128", "NCCL collectives, sizes and groups")]
    # On GPU streams; this 2023 trace records no group size on some calls, which fails it.
    assert "on GPU streams: True" in nccl.detail and not nccl.ok
    assert not found[("nccl_sampled_w128", "profiler overhead")].ok  # no run record


def test_the_sweep_the_check_made_on_a_gpu_passes_every_check():
    # One H200, torch 2.11 + CUDA 13.0, NCCL 2.28.9: every strategy at DP 1, small preset, bf16
    # (tests/fixtures/gpu_sweep/README.md). At DP 1 nothing is exchanged: four checks a run.
    found = checks(ROOT / "tests" / "fixtures" / "gpu_sweep")
    assert sorted({run for run, _ in found}) == ["ddp-dp1", "zero1-dp1", "zero2-dp1", "zero3-dp1"]
    assert len(found) == 16
    failed = [c.line() for c in found.values() if not c.ok]
    assert failed == []
    assert "ranks read as gpu" in found[("zero3-dp1", "CUDA kernels")].detail
    # FSDP2 holds the formula to the byte on a GPU as on the CPU: it is measured, not computed.
    assert "(+0.0%" in found[("zero3-dp1", "model states vs ZeRO")].detail
