"""run.json: the run record rank 0 writes after gathering every rank's measurements."""

from __future__ import annotations

import json
import os
import platform
import statistics
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import torch
import torch.distributed as dist

from instrumented_train import memory
from instrumented_train.buckets import ddp_buckets
from instrumented_train.config import RunConfig
from instrumented_train.distributed import DistEnv, cpus
from instrumented_train.profiling import nccl_version
from instrumented_train.strategies import Parallel
from instrumented_train.train import RankResult
from traceview.parse.run_record import (
    RECORD_VERSION,
    RUN_RECORD,
    GlobalBatch,
    ProfiledStep,
    ProfilerOverhead,
    RankRecord,
    RunRecord,
    Throughput,
)
from traceview.profiler import trace_name


def rank_record(env: DistEnv, par: Parallel, result: RankResult) -> RankRecord:
    return RankRecord(
        rank=env.rank,
        host=platform.node(),
        device=str(env.device),
        model_state_bytes=memory.most_per_category(result.readings),
        model_state_bytes_by_phase=memory.readings_record(result.readings),
        peak_memory=memory.peak_memory(env),
        step_seconds=result.step_seconds,
        losses=result.losses,
        trace=trace_name(env.rank),
        intra_op_threads=torch.get_num_threads(),
        inter_op_threads=torch.get_num_interop_threads(),
        cpus=cpus(),
    )


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def run_record(
    cfg: RunConfig, env: DistEnv, par: Parallel, result: RankResult, ranks: list[RankRecord]
) -> RunRecord:
    num_params = sum(p.numel() for p in par.module.parameters())  # DTensors count global shapes
    global_batch = cfg.micro_batch * env.world_size * cfg.grad_accum
    # Step time: rank 0's clock, the slowest rank sets the pace anyway. The first step warms
    # caches and rebuilds DDP buckets, so it is left out; the median, as traceview compare takes
    # it, so that one slow step does not move it.
    steps = result.step_seconds
    unprofiled = [t for t, p in zip(steps[1:], result.profiled[1:], strict=True) if not p]
    profiled = [t for t, p in zip(steps, result.profiled, strict=True) if p]
    base = _median(unprofiled)
    step_time = base if base is not None else _median(profiled)
    profiled_time = _median(profiled)
    return RunRecord(
        record_version=RECORD_VERSION,
        strategy=cfg.strategy,
        world_size=env.world_size,
        num_params=num_params,
        config=cfg.as_record(),
        model={"preset": cfg.preset, **cfg.model.__dict__, "seq_len": cfg.seq_len},
        backend=env.backend,
        torch_version=str(torch.__version__),
        nccl_version=nccl_version() if env.is_cuda else None,
        hosts=sorted({r.host for r in ranks if r.host}),
        run_id=env.run_id,
        global_batch=GlobalBatch(
            micro_batch=cfg.micro_batch,
            dp=env.world_size,
            grad_accum=cfg.grad_accum,
            samples=global_batch,
            tokens=global_batch * cfg.seq_len,
        ),
        step_seconds=steps,
        # Run step i (0-based) is ProfilerStep#(i - baseline_steps) in the traces.
        profiled_steps=[
            ProfiledStep(run_step=i, profiler_step=i - cfg.baseline_steps)
            for i, kept in enumerate(result.profiled)
            if kept
        ],
        throughput=None
        if step_time is None
        else Throughput(
            step_seconds=step_time,
            samples_per_s=global_batch / step_time,
            tokens_per_s=global_batch * cfg.seq_len / step_time,
            measured_on="unprofiled steps" if base is not None else "profiled steps",
        ),
        profiler_overhead=None
        if base is None or profiled_time is None
        else ProfilerOverhead(
            unprofiled_step_seconds=base,
            profiled_step_seconds=profiled_time,
            ratio=profiled_time / base,
        ),
        ddp_buckets=ddp_buckets(par),
        ranks=ranks,
    )


def gather_and_write(
    cfg: RunConfig, env: DistEnv, par: Parallel, result: RankResult, folder: Path
) -> None:
    mine = rank_record(env, par, result)
    everyone: list[RankRecord | None] = [None] * env.world_size
    dist.all_gather_object(everyone, mine)
    if env.rank != 0:
        return
    record = run_record(cfg, env, par, result, [r for r in everyone if r is not None])
    write_json_atomically(folder / RUN_RECORD, msgspec.to_builtins(record))


def write_json_atomically(path: Path, doc: dict[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.chmod(tmp, 0o644)  # mkstemp makes it private; a record is for everyone to read
    os.replace(tmp, path)
