"""One run: check the run folder, start the process group, train under the profiler, write
the traces and run.json, and always tear the process group down."""

from __future__ import annotations

import gc
import logging
import shutil
from pathlib import Path

import torch.distributed as dist

from instrumented_train.config import ConfigError, RunConfig
from instrumented_train.distributed import init_distributed, shutdown
from instrumented_train.record import gather_and_write
from instrumented_train.strategies import build
from instrumented_train.train import run_steps

log = logging.getLogger("instrumented_train")
RUN_FILES = ("run.json", ".pt.trace.json.gz")


def check_out_folder(out: Path, force: bool) -> None:
    """Every rank checks before any rank writes: an existing run is kept unless --force."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} exists and is not a folder")
    if not out.exists() or not any(out.iterdir()):
        return
    if not force:
        raise ConfigError(f"--out {out} already exists; choose another folder or pass --force")
    if not any(p.name.endswith(RUN_FILES) for p in out.iterdir()):
        raise ConfigError(
            f"--out {out} is not a run folder (no run.json or traces); not replacing it"
        )


def run(cfg: RunConfig) -> None:
    check_out_folder(cfg.out, cfg.force)
    env = init_distributed(cfg.device)
    try:
        if env.rank == 0:
            if cfg.out.exists():
                shutil.rmtree(cfg.out)
            cfg.out.mkdir(parents=True)
        dist.barrier()
        cfg.out.mkdir(parents=True, exist_ok=True)  # nodes without a shared file system
        par = build(cfg, env)
        log.info(
            "%s on %d rank(s), %s, %s parameters",
            cfg.strategy,
            env.world_size,
            env.device,
            f"{sum(p.numel() for p in par.module.parameters()):,}",
        )
        meta: dict[str, object] = {
            "strategy": cfg.strategy,
            "world_size": env.world_size,
            "config": cfg.as_record(),
        }
        result = run_steps(cfg, env, par, meta)
        gather_and_write(cfg, env, par, result)
        log.info("wrote %s", cfg.out)
        # Leave together: a rank tearing down Gloo while another still talks to it can abort.
        # (Only on success: after a failure the other ranks may never arrive.)
        dist.barrier()
        # Free DDP's reducer (it holds the process group) before the group itself goes:
        # destroyed the other way round at exit, Gloo's threads can abort the process.
        del par
        gc.collect()
    finally:
        shutdown()
