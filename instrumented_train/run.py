"""One run: check the run folder, start the process group, train under the profiler, write
the traces and run.json, swap the run into place on success, and always tear the process group
down. A rank stopped by a signal or an error says so in its status file."""

from __future__ import annotations

import gc
import logging
import platform
import signal
from pathlib import Path

import torch.distributed as dist

from instrumented_train import folders
from instrumented_train.config import RunConfig
from instrumented_train.distributed import DistEnv, init_distributed, pin_threads, shutdown
from instrumented_train.record import gather_and_write
from instrumented_train.strategies import build
from instrumented_train.train import run_steps
from traceview.errors import TraceviewError
from traceview.loader.ingest import ingest
from traceview.parse.run_record import RECORD_VERSION, TraceRun
from traceview.plain import counted
from traceview.profiler import job_name

log = logging.getLogger("instrumented_train")


class Stopped(Exception):
    """A signal ended this rank (torchrun stops the others when one rank fails)."""


def _stop(signum: int, frame: object) -> None:
    raise Stopped(f"stopped by {signal.Signals(signum).name} (another rank failed, or the job "
                  "was cancelled)")  # fmt: skip


def run(cfg: RunConfig) -> None:
    out = folders.place_of(cfg.out)
    folders.check_out_folder(out, cfg.force)
    folder = folders.writing_folder(out)  # decided before any rank creates anything
    env = init_distributed(cfg.device)
    pin_threads(cfg.threads, env)
    signal.signal(signal.SIGTERM, _stop)
    status: folders.RankStatus | None = None
    try:
        if env.local_rank == 0:
            folders.prepare(folder)
        dist.barrier()
        folder.mkdir(parents=True, exist_ok=True)  # nodes without a shared file system
        status = folders.RankStatus(folder, env.rank, platform.node())
        _train(cfg, env, folder, status)
        status.finish("done")
        dist.barrier()
        if env.local_rank == 0:
            folders.commit(folder, out)
        log.info("wrote %s", cfg.out)
        if cfg.store is not None and env.rank == 0:
            _store_run_record(cfg)
    except BaseException as e:
        if status is not None:
            stopped = isinstance(e, Stopped | KeyboardInterrupt)
            status.finish("stopped" if stopped else "failed", _reason(e))
        raise
    finally:
        shutdown()


def _train(cfg: RunConfig, env: DistEnv, folder: Path, status: folders.RankStatus) -> None:
    par = build(cfg, env)
    log.info(
        "%s on %s, %s, %s parameters",
        cfg.strategy,
        counted(env.world_size, "rank"),
        env.device,
        f"{sum(p.numel() for p in par.module.parameters()):,}",
    )
    meta = TraceRun(
        record_version=RECORD_VERSION,
        strategy=cfg.strategy,
        world_size=env.world_size,
        config=cfg.as_record(),
        run_id=env.run_id,
    )
    result = run_steps(cfg, env, par, meta, folder, status)
    gather_and_write(cfg, env, par, result, folder)
    if env.rank == 0:
        status.wrote("run.json")
    # Leave together: a rank tearing down Gloo while another still talks to it can abort.
    # (Only on success: after a failure the other ranks may never arrive.)
    dist.barrier()
    # Free DDP's reducer (it holds the process group) before the group itself goes:
    # destroyed the other way round at exit, Gloo's threads can abort the process.
    del par
    gc.collect()


def _store_run_record(cfg: RunConfig) -> None:
    """The ranks stored their traces as they wrote them; the run record joins them now (the
    traces themselves are unchanged, so none is parsed again)."""
    assert cfg.store is not None
    try:
        done = ingest([cfg.out], cfg.store, job=job_name(cfg.out))
    except TraceviewError as e:
        log.warning("run.json not stored in %s: %s", cfg.store, e.message)
        return
    for failure in done.failures:
        log.warning("not stored in %s: %s", cfg.store, failure.message)
    log.info("stored in %s as job %s", cfg.store, done.jobs[0])


def _reason(error: BaseException) -> str:
    if isinstance(error, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")
