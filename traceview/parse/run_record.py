"""run.json, the record the training harness writes beside its traces: what ran (strategy,
world size, Ψ), how fast, how much memory, and DDP's bucket layout."""

from __future__ import annotations

import math
from pathlib import Path

import msgspec

from traceview.errors import TraceviewError

RUN_RECORD = "run.json"


class Bucket(msgspec.Struct, frozen=True):
    index: int
    bytes: int
    params: list[str]


class Throughput(msgspec.Struct, frozen=True):
    step_seconds: float
    samples_per_s: float
    tokens_per_s: float


class GlobalBatch(msgspec.Struct, frozen=True):
    micro_batch: int
    dp: int
    grad_accum: int
    samples: int
    tokens: int


class RankRecord(msgspec.Struct, frozen=True):
    rank: int
    model_state_bytes: dict[str, int]
    peak_memory: dict[str, object] = msgspec.field(default_factory=dict)


class ProfiledStep(msgspec.Struct, frozen=True):
    run_step: int  # 0-based index into step_seconds
    profiler_step: int  # its ProfilerStep#N in the traces


class RunRecord(msgspec.Struct, frozen=True):
    strategy: str
    world_size: int
    num_params: int
    config: dict[str, object]
    global_batch: GlobalBatch
    ranks: list[RankRecord]
    throughput: Throughput | None = None
    step_seconds: list[float] = msgspec.field(default_factory=list)  # every step of the run
    profiled_steps: list[ProfiledStep] = msgspec.field(default_factory=list)
    ddp_buckets: list[Bucket] | None = None
    backend: str | None = None
    torch_version: str | None = None


def read_run_record(folder: Path) -> RunRecord | None:
    """The folder's run.json, or None when it has none. A broken one is an error."""
    path = folder / RUN_RECORD
    if not path.is_file():
        return None
    try:
        record = msgspec.json.decode(path.read_bytes(), type=RunRecord)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError) as e:
        raise TraceviewError(f"{path}: not a run record ({e})") from None
    except OSError as e:
        raise TraceviewError(f"{path}: cannot read ({e.strerror or e})") from None
    if problem := _impossible(record):
        raise TraceviewError(f"{path}: not a run record ({problem})")
    return record


def _impossible(record: RunRecord) -> str | None:
    if not 1 <= record.world_size <= 2**31 - 1:
        return f"world_size {record.world_size}"
    if record.num_params < 0:
        return f"num_params {record.num_params}"
    batch = record.global_batch
    if min(batch.micro_batch, batch.dp, batch.grad_accum, batch.samples, batch.tokens) < 1:
        return "a global batch with a count below 1"
    if any(not math.isfinite(t) or t <= 0 for t in record.step_seconds):
        return "a step time that is not a positive number"
    if any(not 0 <= r.rank < record.world_size for r in record.ranks):
        return "a rank outside the world size"
    return None


STATUS_GLOB = "rank*.status.json"


class RankStatus(msgspec.Struct, frozen=True):
    """A rank's own account of a run in progress (the harness rewrites it as it goes)."""

    rank: int
    state: str  # running, done, failed, stopped
    steps_done: int = 0
    wrote: list[str] = msgspec.field(default_factory=list)
    reason: str | None = None
    host: str | None = None


def incomplete_run(folder: Path) -> str | None:
    """Why a run folder is incomplete, from its ranks' accounts; None for a finished run (or a
    folder of foreign traces). A rank still "running" stopped without a word: killed."""
    if (folder / RUN_RECORD).exists():
        return None
    accounts: list[RankStatus] = []
    unreadable = 0
    for path in sorted(folder.glob(STATUS_GLOB)):
        try:
            accounts.append(msgspec.json.decode(path.read_bytes(), type=RankStatus))
        except (msgspec.DecodeError, msgspec.ValidationError, OSError, ValueError, RecursionError):
            unreadable += 1
    if not accounts and not unreadable:
        return None
    said = []
    for status in sorted(accounts, key=lambda a: a.rank):
        steps = f"after {status.steps_done} steps"
        if status.state == "done":
            text = f"rank {status.rank} finished"
        elif status.state == "running":
            text = f"rank {status.rank} went silent {steps} (killed?)"
        else:
            why = status.reason or "no reason given"
            text = f"rank {status.rank} {status.state} {steps}: {why}"
        if status.wrote:
            text += f" (wrote {', '.join(status.wrote)})"
        said.append(text)
    if unreadable:
        said.append(f"{unreadable} account(s) unreadable")
    return "incomplete run (no run.json): " + "; ".join(said)
