"""The run configuration: frozen, keyword-only dataclasses validated on construction.
The command-line flags are built from these fields (instrumented_train/flags.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal

import msgspec

from traceview.parse.run_record import RunFlags
from traceview.strategies import PRECISION_OF_RUN, STRATEGIES

DeviceChoice = Literal["auto", "cpu", "cuda"]
Preset = Literal["tiny", "small", "gpt2", "medium", "1b"]


class ConfigError(ValueError):
    """An invalid flag value or combination; the message is one line for the user."""


@dataclass(frozen=True, kw_only=True)
class ModelShape:
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ConfigError(f"d_model {self.d_model} is not divisible by {self.n_heads} heads")


# From a few million parameters (CPU tests) to about a billion (GPUs).
PRESETS: dict[str, ModelShape] = {
    "tiny": ModelShape(vocab_size=8192, d_model=128, n_layers=4, n_heads=4),  # ~2.9 M
    "small": ModelShape(vocab_size=16384, d_model=384, n_layers=6, n_heads=6),  # ~23 M
    "gpt2": ModelShape(vocab_size=50304, d_model=768, n_layers=12, n_heads=12),  # ~163 M
    "medium": ModelShape(vocab_size=50304, d_model=1024, n_layers=24, n_heads=16),  # ~406 M
    "1b": ModelShape(vocab_size=50304, d_model=2048, n_layers=18, n_heads=16),  # ~1.1 B
}


# What each numeric flag may be (inclusive): beyond these a run is a typo, not an experiment.
_BOUNDS: dict[str, tuple[float, float]] = {
    "seq_len": (1, 1 << 17),
    "micro_batch": (1, 1 << 16),
    "grad_accum": (1, 1 << 16),
    "baseline_steps": (0, 100_000),  # at least 2: checked with its reason below
    "wait": (0, 100_000),
    "warmup": (0, 100_000),
    "active": (1, 100_000),
    "lr": (0.0, 10.0),  # positive: checked below
    "seed": (0, 2**63 - 1),
    "bucket_cap_mb": (0.0, 1 << 20),  # positive: checked below
    "threads": (1, 4096),
}
MAX_TOKENS_PER_MICRO_STEP = 1 << 24


def _help(text: str, **extra: object) -> dict[str, object]:
    return {"help": text, **extra}


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    strategy: str = field(
        default="ddp",
        metadata=_help(
            "; ".join(f"{s.name}: {s.torch_feature}" for s in STRATEGIES.values()),
            choices=tuple(STRATEGIES),
        ),
    )
    preset: Preset = field(default="tiny", metadata=_help("model size"))
    seq_len: int = field(default=128, metadata=_help("tokens per sample"))
    micro_batch: int = field(default=8, metadata=_help("samples per rank per micro-step"))
    grad_accum: int = field(default=1, metadata=_help("micro-steps per optimizer step"))
    baseline_steps: int = field(
        default=3,
        metadata=_help(
            "unprofiled steps first: memory readings, and the step time the profiler's overhead is "
            "measured against"
        ),
    )
    wait: int = field(default=1, metadata=_help("profiler schedule: steps skipped"))
    warmup: int = field(default=1, metadata=_help("profiler schedule: steps traced, not kept"))
    active: int = field(default=3, metadata=_help("profiler schedule: steps traced and kept"))
    lr: float = field(default=3e-4, metadata=_help("AdamW learning rate"))
    seed: int = field(default=0, metadata=_help("seed of the weights and the synthetic data"))
    bucket_cap_mb: float | None = field(
        default=None, metadata=_help("DDP gradient bucket size (ddp, zero1; default 25)")
    )
    precision: str = field(
        default="fp32",
        metadata=_help("bf16: mixed precision (GPU)", choices=tuple(PRECISION_OF_RUN)),
    )
    device: DeviceChoice = field(
        default="auto", metadata=_help("auto: CUDA + NCCL when a GPU is present, else CPU + Gloo")
    )
    threads: int | None = field(
        default=None,
        metadata=_help(
            "intra-op threads per rank (default: 1 on CPU, torch's own on GPU): the same at every "
            "DP degree, so runs compare like for like"
        ),
    )
    record_shapes: bool = field(default=True, metadata=_help("record op input shapes"))
    out: Path = field(default=Path("runs/run"), metadata=_help("run folder to create"))
    force: bool = field(default=False, metadata=_help("replace an existing run folder"))
    store: Path | None = field(
        default=None,
        metadata=_help(
            "also write each rank's trace into this traceview store as it is written (job: the "
            "run folder's name)"
        ),
    )

    def __post_init__(self) -> None:
        for name in ("strategy", "precision"):
            choices = _FIELDS[name].metadata["choices"]
            if getattr(self, name) not in choices:
                raise ConfigError(f"--{name} must be one of {', '.join(choices)}")
        for name, (lo, hi) in _BOUNDS.items():
            value = getattr(self, name)
            if value is None:
                continue
            flag = "--" + name.replace("_", "-")
            if not math.isfinite(value):
                raise ConfigError(f"{flag} must be a finite number, not {value}")
            if value < lo:
                raise ConfigError(f"{flag} must be at least {lo:g}")
            if value > hi:
                shown = f"{value:,}" if isinstance(value, int) else f"{value:g}"
                raise ConfigError(f"{flag} must be at most {hi:,g} (got {shown})")
        if self.baseline_steps < 2:
            raise ConfigError(
                "--baseline-steps must be at least 2 (memory is read once optimizer state exists)"
            )
        if self.lr <= 0:
            raise ConfigError("--lr must be positive")
        if self.bucket_cap_mb is not None:
            if not STRATEGIES[self.strategy].ddp_buckets:
                with_buckets = " and ".join(s.name for s in STRATEGIES.values() if s.ddp_buckets)
                raise ConfigError(f"--bucket-cap-mb applies to {with_buckets} only")
            if self.bucket_cap_mb <= 0:
                raise ConfigError("--bucket-cap-mb must be positive")
        tokens = self.seq_len * self.micro_batch
        if tokens > MAX_TOKENS_PER_MICRO_STEP:
            raise ConfigError(
                f"--seq-len × --micro-batch = {tokens:,} tokens per micro-step; at most "
                f"{MAX_TOKENS_PER_MICRO_STEP:,}"
            )
        if self.precision == "bf16" and self.device == "cpu":
            raise ConfigError("bf16 mixed precision needs a GPU (--device cuda or auto)")

    @property
    def model(self) -> ModelShape:
        return PRESETS[self.preset]

    @property
    def bucket_mb(self) -> float:
        return 25.0 if self.bucket_cap_mb is None else self.bucket_cap_mb

    @property
    def steps(self) -> int:
        return self.baseline_steps + self.wait + self.warmup + self.active

    def as_record(self) -> RunFlags:
        flags = {k: (str(v) if isinstance(v, Path) else v) for k, v in self.__dict__.items()}
        return msgspec.convert(flags, RunFlags)


_FIELDS = {f.name: f for f in fields(RunConfig)}
