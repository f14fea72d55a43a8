"""The training loop: unprofiled baseline steps (memory readings, step time), then the
profiler's schedule; every rank's record gathered into run.json by rank 0."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from instrumented_train import memory
from instrumented_train.config import RunConfig
from instrumented_train.distributed import DistEnv
from instrumented_train.folders import RankStatus
from instrumented_train.model import loss_fn, synthetic_batch
from instrumented_train.profiling import add_run_metadata, make_profiler
from instrumented_train.strategies import Parallel
from traceview.parse.run_record import TraceRun

log = logging.getLogger("instrumented_train")


@dataclass
class RankResult:
    """What one rank measured, sent to rank 0 for run.json."""

    step_seconds: list[float] = field(default_factory=list)
    profiled: list[bool] = field(default_factory=list)  # per step: inside the profiler's window
    losses: list[float] = field(default_factory=list)
    readings: dict[str, memory.Reading] = field(default_factory=dict)


def _sync(env: DistEnv) -> None:
    if env.is_cuda:
        torch.cuda.synchronize(env.device)


def train_step(
    cfg: RunConfig, env: DistEnv, par: Parallel, step: int, result: RankResult, read_memory: bool
) -> None:
    start = time.perf_counter()
    total = 0.0
    for micro in range(cfg.grad_accum):
        last = micro == cfg.grad_accum - 1
        inputs, targets = synthetic_batch(
            cfg.model.vocab_size,
            cfg.micro_batch,
            cfg.seq_len,
            seed=cfg.seed,
            rank=env.rank,
            step=step,
            micro=micro,
            device=env.device,
        )
        with par.sync(last):
            loss = loss_fn(par.model(inputs), targets)
            if read_memory and micro == 0:
                result.readings["after_forward"] = memory.read(par)
            (loss / cfg.grad_accum).backward()
        total += loss.item() / cfg.grad_accum
    if read_memory:
        result.readings["after_backward"] = memory.read(par)
    par.optimizer.step()
    if read_memory:
        result.readings["after_step"] = memory.read(par)
    par.optimizer.zero_grad(set_to_none=True)
    _sync(env)
    result.step_seconds.append(time.perf_counter() - start)
    result.losses.append(total)


def run_steps(
    cfg: RunConfig,
    env: DistEnv,
    par: Parallel,
    run_meta: TraceRun,
    folder: Path,
    status: RankStatus,
) -> RankResult:
    """Every step, then the trace into `folder`; `status` hears of each step and file."""
    result = RankResult()
    for step in range(cfg.baseline_steps):
        # Memory is read on the last unprofiled step: optimizer state exists by then.
        train_step(cfg, env, par, step, result, read_memory=step == cfg.baseline_steps - 1)
        result.profiled.append(False)
        status.step_done(step + 1)
        log.info("step %d: loss %.4f, %.3f s", step, result.losses[-1], result.step_seconds[-1])
    first_kept = cfg.wait + cfg.warmup
    with make_profiler(cfg, env, folder, status.wrote) as prof:
        for i in range(cfg.wait + cfg.warmup + cfg.active):
            step = cfg.baseline_steps + i
            if i == first_kept:
                add_run_metadata(prof, run_meta)
            train_step(cfg, env, par, step, result, read_memory=False)
            result.profiled.append(i >= first_kept)
            status.step_done(step + 1)
            # Named as traceview names it: the profiler counts its own steps from 0.
            phase = "kept" if i >= first_kept else "warm-up" if i >= cfg.wait else "skipped"
            log.info(
                "step %d = ProfilerStep#%d (%s): loss %.4f, %.3f s",
                step,
                i,
                phase,
                result.losses[-1],
                result.step_seconds[-1],
            )
            prof.step()
    return result
