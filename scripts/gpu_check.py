"""The GPU acceptance check (docs/harness.md "On GPUs"): on a machine with N >= 1 GPUs, run the
harness for every strategy at every DP degree the GPUs allow (1, 2, 4, ... up to N) on NCCL,
then check what traceview reads of each run: CUDA kernels; NCCL collectives with their message
sizes and process-group sizes; steps with their overlap; DDP buckets and FSDP modules; measured
model states within 10 % of the ZeRO formula; the profiler's overhead on the step, stated. A
line per check, PASS or FAIL with its numbers, then what it could not check here, also written
to OUT/gpu_check.txt; exit 1 when one fails. Without a GPU it says so in one line and exits 0;
on a host whose driver lists GPUs that torch cannot use (a CPU build), it says so and exits 1.

    bash scripts/gpu_check.sh                       # small preset, bf16, into gpu_check_out/
    bash scripts/gpu_check.sh --preset gpt2 --out /scratch/gpu_check
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

MEMORY_TOLERANCE = 0.10
STRATEGIES = ("ddp", "zero1", "zero2", "zero3")
BUCKETED = ("ddp", "zero1")  # their gradients leave in DDP buckets; the others per FSDP module


@dataclass(frozen=True)
class Check:
    run: str
    what: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{self.run}  {self.what}: {'PASS' if self.ok else 'FAIL'} — {self.detail}"


def degrees(gpus: int) -> list[int]:
    """The DP degrees N GPUs allow: the powers of two up to N."""
    out, dp = [], 1
    while dp <= gpus:
        out.append(dp)
        dp *= 2
    return out


DRIVER_GPUS = Path("/proc/driver/nvidia/gpus")  # a folder per GPU the NVIDIA driver holds


def gpus_on_the_host() -> int:
    """NVIDIA GPUs the host's driver lists, whatever torch was built for (0: none, or no
    NVIDIA driver)."""
    return len(list(DRIVER_GPUS.iterdir())) if DRIVER_GPUS.is_dir() else 0


def gpu_count() -> tuple[int, str]:
    """How many CUDA devices torch sees, and in words why none where it sees none."""
    try:
        import torch
    except ImportError:
        return 0, "torch is not installed"
    if not torch.cuda.is_available():
        return 0, f"torch {torch.__version__} sees no CUDA device"
    return torch.cuda.device_count(), ""


def not_checked(gpus: int) -> list[str]:
    """What this check cannot say on this machine: said beside its count, never passed over."""
    said = [
        "model states against the CUDA allocator (the harness counts the tensors each rank "
        "holds, as the ZeRO formula does; the allocator's peak also holds activations and "
        "buffers, so it is no measure of the states alone)"
    ]
    if gpus < 2:
        said.append(
            "NCCL collectives, DDP buckets and FSDP modules: one GPU runs DP 1 only, where "
            "nothing is exchanged"
        )
    return said


def run_checks(runs: object) -> list[Check]:
    """Every check on every run of a loaded sweep (traceview.Runs)."""
    rows = {row.job: row for row in runs.scaling()}  # type: ignore[attr-defined]
    out: list[Check] = []
    for job in runs.jobs:  # type: ignore[attr-defined]
        name = Path(job.name).name
        row = rows.get(job.name)
        dp = row.dp if row is not None else len(job.ranks)
        out += _kernels(name, job) + _steps(name, job) + _memory(name, row)
        if dp and dp > 1:
            out += _collectives(name, job) + _labels(name, job)
        out.append(_overhead(name, job))
    return out


def _kernels(name: str, job: object) -> list[Check]:
    modes = sorted({r.mode for r in job.ranks})  # type: ignore[attr-defined]
    compute = sum(r.total.compute_ns for r in job.ranks if r.total)  # type: ignore[attr-defined]
    ok = modes == ["gpu"] and compute > 0
    return [Check(name, "CUDA kernels", ok, f"ranks read as {'/'.join(modes)}, "
                  f"compute {compute / 1e6:,.1f} ms")]  # fmt: skip


def _collectives(name: str, job: object) -> list[Check]:
    calls = job.calls  # type: ignore[attr-defined]
    on_gpu = calls["lane"].str.starts_with("stream").all() if calls.height else False
    sized = calls["bytes"].null_count() == 0 and calls["group_size"].null_count() == 0
    kinds = ", ".join(sorted(set(calls["collective"].drop_nulls().to_list())))
    ok = bool(calls.height and on_gpu and sized)
    return [Check(name, "NCCL collectives, sizes and groups", ok,
                  f"{calls.height} calls ({kinds or 'none'}), on GPU streams: {on_gpu}, "
                  f"every size and group known: {sized}")]  # fmt: skip


def _steps(name: str, job: object) -> list[Check]:
    steps = [s for r in job.ranks for s in r.steps]  # type: ignore[attr-defined]
    measured = [s for s in steps if s.breakdown.comm_ns is not None]
    pct = [s.breakdown.overlap_pct for s in measured if s.breakdown.overlap_pct is not None]
    said = f"median overlap {sorted(pct)[len(pct) // 2]:.0f} %" if pct else "no overlap figure"
    return [Check(name, "steps and overlap", bool(measured),
                  f"{len(measured)} of {len(steps)} rank-steps with communication measured, "
                  f"{said}")]  # fmt: skip


def _labels(name: str, job: object) -> list[Check]:
    calls = job.calls  # type: ignore[attr-defined]
    strategy = job.strategy  # type: ignore[attr-defined]
    what = "DDP buckets" if strategy in BUCKETED else "FSDP modules"
    wanted = ["all_reduce"] if strategy in BUCKETED else ["all_gather", "reduce_scatter"]
    mine = calls.filter(calls["collective"].is_in(wanted))
    labelled = mine.height - mine["label"].null_count() if mine.height else 0
    labels = len(set(mine["label"].drop_nulls().to_list())) if mine.height else 0
    return [Check(name, what, bool(mine.height) and labelled == mine.height,
                  f"{labelled} of {mine.height} {'/'.join(wanted)} calls labelled, "
                  f"{labels} distinct")]  # fmt: skip


def _memory(name: str, row: object) -> list[Check]:
    measured = getattr(row, "model_state_bytes", None)
    expected = getattr(row, "model_state_layout_bytes", None) or getattr(
        row, "model_state_theory_bytes", None
    )
    if not measured or not expected:
        return [Check(name, "model states vs ZeRO", False, "no measured or expected figure")]
    off = measured / expected - 1
    return [Check(name, "model states vs ZeRO", abs(off) <= MEMORY_TOLERANCE,
                  f"tensors held {measured / 2**20:,.1f} MiB, formula {expected / 2**20:,.1f} "
                  f"MiB ({off:+.1%}; within {MEMORY_TOLERANCE:.0%} passes): the sharding, "
                  "counted, not the allocator")]  # fmt: skip


def _overhead(name: str, job: object) -> Check:
    run = job.run  # type: ignore[attr-defined]
    said = run.profiler_overhead if run is not None else None
    if said is None:
        return Check(name, "profiler overhead", False, "not in the run record")
    return Check(name, "profiler overhead", True,
                 f"profiled step {said.profiled_step_seconds * 1e3:,.1f} ms against "
                 f"{said.unprofiled_step_seconds * 1e3:,.1f} ms unprofiled "
                 f"(×{said.ratio:.2f})")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="gpu_check", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("gpu_check_out"))
    p.add_argument("--preset", default="small", help="the harness's model preset")
    p.add_argument("--precision", default="bf16")
    args = p.parse_args(argv)
    gpus, why = gpu_count()
    if not gpus and gpus_on_the_host():
        listed = gpus_on_the_host()
        print(f"gpu_check: the driver lists {listed} GPU{'s' * (listed != 1)}, but {why}: "
              "install a CUDA build of torch (pip install torch --index-url "
              "https://download.pytorch.org/whl/cu128) and run again")  # fmt: skip
        return 1
    if not gpus:
        print(f"gpu_check: no GPU here ({why}): nothing to check")
        return 0
    sweep = [sys.executable, "-m", "instrumented_train.sweep", "--strategies", ",".join(STRATEGIES),
             "--dp", ",".join(map(str, degrees(gpus))), "--device", "cuda", "--force",
             "--out", str(args.out / "sweep"), "--", "--preset", args.preset,
             "--precision", args.precision]  # fmt: skip
    print(f"gpu_check: {gpus} GPU{'s' * (gpus != 1)}: {' '.join(sweep[2:])}", flush=True)
    done = subprocess.run(sweep)
    if done.returncode != 0:
        print(f"gpu_check: the sweep failed (exit {done.returncode}): see {args.out}/sweep/logs")
        return 1
    import traceview

    checks = run_checks(traceview.load_runs([args.out / "sweep"]))
    lines = [c.line() for c in checks]
    failed = sum(not c.ok for c in checks)
    lines.append(f"gpu_check: {len(checks) - failed} of {len(checks)} checks pass")
    lines += [f"gpu_check: not checked: {what}" for what in not_checked(gpus)]
    (args.out / "gpu_check.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
