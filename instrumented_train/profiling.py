"""torch.profiler around the profiled steps; each rank's trace written whole (and into a
traceview store, when asked) by traceview's own profiler handler."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import torch
from torch.profiler import ProfilerActivity, profile, schedule

from instrumented_train.config import RunConfig
from instrumented_train.distributed import DistEnv
from traceview import profiler
from traceview.parse.run_record import TRACE_METADATA_KEY, TraceRun


def add_run_metadata(prof: profile, run: TraceRun) -> None:
    """The run's identity inside the trace (a top-level key traceview reads); the profiler must
    be tracing."""
    prof.add_metadata_json(TRACE_METADATA_KEY, msgspec.json.encode(run).decode())


def make_profiler(
    cfg: RunConfig, env: DistEnv, folder: Path, written: Callable[[str], None]
) -> profile:
    """Traces go into `folder` (and `cfg.store`, as job `cfg.out`'s name); `written(name)` is
    told of each one once it is whole."""
    activities = [ProfilerActivity.CPU]
    if env.is_cuda:
        activities.append(ProfilerActivity.CUDA)
    on_ready = profiler.handler(
        folder, store=cfg.store, job=profiler.job_name(cfg.out), on_written=written
    )

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
