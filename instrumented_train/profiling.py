"""torch.profiler around the profiled steps, and an atomic gzip trace per rank."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import msgspec
import torch
from torch.profiler import ProfilerActivity, profile, schedule

from instrumented_train.config import RunConfig
from instrumented_train.distributed import DistEnv
from traceview.parse.run_record import TRACE_METADATA_KEY, TraceRun


def trace_path(out: Path, rank: int) -> Path:
    return out / f"rank{rank}.pt.trace.json.gz"


def add_run_metadata(prof: profile, run: TraceRun) -> None:
    """The run's identity inside the trace (a top-level key traceview reads); the profiler must
    be tracing."""
    prof.add_metadata_json(TRACE_METADATA_KEY, msgspec.json.encode(run).decode())


def make_profiler(
    cfg: RunConfig, env: DistEnv, folder: Path, written: Callable[[str], None]
) -> profile:
    """Traces go into `folder`; `written(name)` is told of each one once it is whole."""
    activities = [ProfilerActivity.CPU]
    if env.is_cuda:
        activities.append(ProfilerActivity.CUDA)
    target = trace_path(folder, env.rank)

    def on_ready(prof: profile) -> None:
        # A hidden temporary name in the same folder, then rename: a crash never leaves a
        # half-written file that looks whole (and the .gz suffix makes the export compress).
        partial = target.with_name(f".{target.name}.partial.gz")
        prof.export_chrome_trace(str(partial))
        os.replace(partial, target)
        written(target.name)

    return profile(
        activities=activities,
        schedule=schedule(wait=cfg.wait, warmup=cfg.warmup, active=cfg.active, repeat=1),
        on_trace_ready=on_ready,
        record_shapes=cfg.record_shapes,
    )


def nccl_version() -> str | None:
    if not torch.cuda.is_available():
        return None
    try:
        return ".".join(str(v) for v in torch.cuda.nccl.version())
    except (RuntimeError, AttributeError):
        return None
