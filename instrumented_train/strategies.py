"""DDP, ZeRO-1, ZeRO-2 and ZeRO-3 around the same model, behind one small interface."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from instrumented_train.config import ConfigError, RunConfig
from instrumented_train.distributed import DistEnv
from instrumented_train.model import GPT
from traceview.strategies import STRATEGIES


def unsupported_reason(strategy: str, torch_version: str) -> str | None:
    """Why the installed torch cannot run `strategy`, or None."""
    major, minor = (int(x) for x in torch_version.split("+")[0].split(".")[:2])
    need = STRATEGIES[strategy].min_torch
    if (major, minor) < need:
        return (
            f"--strategy {strategy} needs torch >= {need[0]}.{need[1]} (installed: {torch_version})"
        )
    return None


@dataclass
class Parallel:
    """A wrapped model: what the training loop needs and what the run record reads."""

    model: nn.Module  # call this one
    module: GPT  # the plain model inside (parameter names, structure)
    optimizer: torch.optim.Optimizer
    local_optimizer: torch.optim.Optimizer  # the one holding this rank's state
    sync: Callable[[bool], contextlib.AbstractContextManager[Any]]  # sync(last_micro_step)
    ddp: DistributedDataParallel | None = None
    fsdp_modules: tuple[nn.Module, ...] = ()


def build(cfg: RunConfig, env: DistEnv) -> Parallel:
    if reason := unsupported_reason(cfg.strategy, torch.__version__):
        raise ConfigError(reason)
    torch.manual_seed(cfg.seed)  # identical initial weights on every rank, for every strategy
    module = GPT(cfg.model, cfg.seq_len).to(env.device)
    if STRATEGIES[cfg.strategy].wrapper == "ddp":
        return _ddp(cfg, env, module)
    return _fsdp(cfg, env, module)


def _ddp(cfg: RunConfig, env: DistEnv, module: GPT) -> Parallel:
    ddp = DistributedDataParallel(
        module,
        device_ids=[env.local_rank] if env.is_cuda else None,
        bucket_cap_mb=cfg.bucket_mb,
    )
    optimizer: torch.optim.Optimizer
    local: torch.optim.Optimizer
    if STRATEGIES[cfg.strategy].shards_optimizer_only:
        from torch.distributed.optim import ZeroRedundancyOptimizer

        zero = ZeroRedundancyOptimizer(
            ddp.parameters(), optimizer_class=torch.optim.AdamW, lr=cfg.lr
        )
        optimizer, local = zero, zero.optim
    else:
        optimizer = local = torch.optim.AdamW(ddp.parameters(), lr=cfg.lr)

    def sync(last: bool) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext() if last else ddp.no_sync()

    model: nn.Module = ddp
    if cfg.precision == "bf16":
        model = _Autocast(ddp)
    return Parallel(
        model=model, module=module, optimizer=optimizer, local_optimizer=local, sync=sync, ddp=ddp
    )


def _fsdp(cfg: RunConfig, env: DistEnv, module: GPT) -> Parallel:
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    reshard = STRATEGIES[cfg.strategy].reshard_after_forward
    policy = MixedPrecisionPolicy(
        param_dtype=torch.bfloat16 if cfg.precision == "bf16" else None,
        reduce_dtype=torch.float32 if cfg.precision == "bf16" else None,
    )
    for block in module.blocks:
        fully_shard(block, reshard_after_forward=reshard, mp_policy=policy)
    fully_shard(module, reshard_after_forward=reshard, mp_policy=policy)
    optimizer = torch.optim.AdamW(module.parameters(), lr=cfg.lr)

    @contextlib.contextmanager
    def sync(last: bool) -> Iterator[None]:
        module.set_requires_gradient_sync(last)  # type: ignore[operator]
        yield

    return Parallel(
        model=module,
        module=module,
        optimizer=optimizer,
        local_optimizer=optimizer,
        sync=sync,
        fsdp_modules=(*module.blocks, module),
    )


class _Autocast(nn.Module):
    """bf16 autocast around DDP's forward (FSDP2 casts through its MixedPrecisionPolicy)."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            return self.inner(x)
