"""One way to start and stop the process group: NCCL on CUDA, Gloo on CPU."""

from __future__ import annotations

import logging
import os
import uuid
from dataclasses import dataclass

import torch
import torch.distributed as dist

from instrumented_train.config import ConfigError, DeviceChoice
from traceview.plain import counted

log = logging.getLogger("instrumented_train")


@dataclass(frozen=True, kw_only=True)
class DistEnv:
    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    device: torch.device
    backend: str
    run_id: str  # the same on every rank of this launch (run_identity)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"


def _env_int(name: str) -> int:
    try:
        return int(os.environ[name])
    except KeyError:
        raise ConfigError(
            f"{name} is not set: start with torchrun, e.g. "
            "torchrun --standalone --nproc_per_node=2 -m instrumented_train"
        ) from None


def check_devices(choice: DeviceChoice, local_world_size: int, gpus: int) -> str:
    """The device type to use, or a ConfigError saying why the request cannot run."""
    if choice == "cpu" or (choice == "auto" and gpus == 0):
        return "cpu"
    if gpus == 0:
        raise ConfigError("--device cuda, but no CUDA device is available")
    if local_world_size > gpus:
        raise ConfigError(
            f"{local_world_size} ranks on this node but only {counted(gpus, 'GPU')}: "
            f"use --nproc_per_node={gpus} or fewer"
        )
    return "cuda"


def init_distributed(choice: DeviceChoice) -> DistEnv:
    rank, world = _env_int("RANK"), _env_int("WORLD_SIZE")
    local_rank = _env_int("LOCAL_RANK")
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    kind = check_devices(choice, local_world, torch.cuda.device_count())
    if kind == "cuda":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)  # before init: NCCL binds the communicator to it
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    logging.basicConfig(
        level=logging.INFO if rank == 0 else logging.WARNING,
        format=f"[rank{rank}] %(message)s",
    )
    return DistEnv(
        rank=rank,
        local_rank=local_rank,
        world_size=world,
        local_world_size=local_world,
        device=device,
        backend=dist.get_backend(),
        run_id=run_identity(),
    )


def run_identity() -> str:
    """This launch's identity, the same on every rank: torchrun's rendezvous id (the same on
    every node of a job, and reused from job to job by many scripts) with a token rank 0 draws
    and sends to the others, so that two launches never share one."""
    token = [uuid.uuid4().hex[:12] if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(token, src=0)
    return f"{os.environ.get('TORCHELASTIC_RUN_ID', 'none')}/{token[0]}"


def shutdown() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def cpus() -> list[int]:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def pin_threads(threads: int | None, env: DistEnv) -> int:
    """torch's intra-op threads for this rank: `threads`, else 1 on CPU (torchrun sets
    OMP_NUM_THREADS=1 only when it starts several processes, so a DP-1 run would otherwise use
    every core and not compare with the others), else torch's own on GPU. Warns (once per node)
    when the node's ranks ask for more threads than it has cores. The threads set."""
    wanted = threads if threads is not None else (None if env.is_cuda else 1)
    if wanted is not None:
        torch.set_num_threads(wanted)
    have = torch.get_num_threads()
    cores = len(cpus())
    if env.local_rank == 0 and env.local_world_size * have > cores:
        log.warning(
            "%d ranks × %s on this node exceed the %s it may use: "
            "the ranks compete for cores, and step times show it",
            env.local_world_size,
            counted(have, "intra-op thread"),
            counted(cores, "core"),
        )
    return have
