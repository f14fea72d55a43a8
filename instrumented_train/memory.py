"""Model-state bytes measured from the tensors each rank really holds, by category.

Storage is counted once however many tensors view it; sharded (DTensor) parameters count
their local shard. FSDP2 keeps its parameter shards while the full parameters are out
(ZeRO-2 between forward and backward), so those shards are counted too."""

from __future__ import annotations

import resource
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import torch

from instrumented_train.distributed import DistEnv
from instrumented_train.strategies import Parallel
from traceview.parse.run_record import PeakMemory


@dataclass(frozen=True)
class Reading:
    params: int
    grads: int
    optimizer: int

    @property
    def total(self) -> int:
        return self.params + self.grads + self.optimizer


def storage_bytes(tensors: Iterable[torch.Tensor | None]) -> int:
    storages: dict[int, int] = {}
    for t in tensors:
        if t is None:
            continue
        if hasattr(t, "to_local"):  # DTensor: this rank's shard
            t = t.to_local()
        storage = t.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())


def _fsdp_shards(par: Parallel) -> list[torch.Tensor]:
    shards = []
    for module in par.fsdp_modules:
        group = module._get_fsdp_state()._fsdp_param_group  # type: ignore[operator]
        if group is not None:
            shards += [fp.sharded_param for fp in group.fsdp_params]
    return shards


def read(par: Parallel) -> Reading:
    params = [*par.module.parameters(), *_fsdp_shards(par)]
    optimizer_state = [
        t
        for state in par.local_optimizer.state.values()
        for t in state.values()
        if torch.is_tensor(t)
    ]
    return Reading(
        params=storage_bytes(params),
        grads=storage_bytes(p.grad for p in par.module.parameters()),
        optimizer=storage_bytes(optimizer_state),
    )


def most_per_category(readings: dict[str, Reading]) -> dict[str, int]:
    """Each category where it is largest: the peak a stage reaches across the step."""
    return {
        "params": max(r.params for r in readings.values()),
        "grads": max(r.grads for r in readings.values()),
        "optimizer": max(r.optimizer for r in readings.values()),
    }


def readings_record(readings: dict[str, Reading]) -> dict[str, dict[str, int]]:
    return {phase: asdict(r) for phase, r in readings.items()}


def peak_memory(env: DistEnv) -> PeakMemory:
    if env.is_cuda:
        return PeakMemory("cuda_max_allocated", torch.cuda.max_memory_allocated(env.device))
    # ru_maxrss is in KiB on Linux.
    return PeakMemory("process_peak_rss", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
