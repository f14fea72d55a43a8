"""run.json, the record the training harness writes beside its traces: what ran (strategy,
world size, Ψ), how fast, how much memory, and DDP's bucket layout."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TypeVar

import msgspec

from traceview.errors import TraceviewError, unreadable
from traceview.plain import counted

T = TypeVar("T")

RUN_RECORD = "run.json"
# The schema below, versioned: the harness writes these structs, traceview reads them, and a
# record from a newer harness is refused rather than half-read.
RECORD_VERSION = 1


class Bucket(msgspec.Struct, frozen=True):
    index: int
    bytes: int
    params: list[str]


class Throughput(msgspec.Struct, frozen=True):
    step_seconds: float
    samples_per_s: float
    tokens_per_s: float
    measured_on: str = "unprofiled steps"  # or "profiled steps" when there were none


class MachineLoad(msgspec.Struct, frozen=True):
    """What a sweep measured around a run (instrumented_train/load.py): the cores the run could
    use, and those other processes kept busy while it ran and just before the sweep began."""

    cores: int
    other_busy_cores: float | None
    other_busy_cores_before: float | None = None

    def contended(self, ranks: int, threads: int) -> bool:
        """Ranks × threads plus the other processes' load exceed the cores: then step times and
        E(N) measure that contention. A load under QUIET_CORES is the machine's own noise."""
        load = self.other_busy_cores
        return load is not None and load >= QUIET_CORES and ranks * threads + load > self.cores


QUIET_CORES = 0.1


class ProfilerOverhead(msgspec.Struct, frozen=True):
    unprofiled_step_seconds: float
    profiled_step_seconds: float
    ratio: float


class GlobalBatch(msgspec.Struct, frozen=True):
    micro_batch: int
    dp: int
    grad_accum: int
    samples: int
    tokens: int


class PeakMemory(msgspec.Struct, frozen=True):
    kind: str  # cuda_max_allocated or process_peak_rss
    bytes: int


class RankRecord(msgspec.Struct, frozen=True):
    rank: int
    # Bytes per state category (params, grads, optimizer), each at its largest over a step.
    model_state_bytes: dict[str, int]
    model_state_bytes_by_phase: dict[str, dict[str, int]] = msgspec.field(default_factory=dict)
    peak_memory: PeakMemory | None = None
    host: str | None = None
    device: str | None = None
    step_seconds: list[float] = msgspec.field(default_factory=list)
    losses: list[float] = msgspec.field(default_factory=list)
    trace: str | None = None  # the rank's trace file, beside run.json
    # What the rank ran with: torch's intra-op and inter-op threads, the CPUs it could use.
    intra_op_threads: int | None = None
    inter_op_threads: int | None = None
    cpus: list[int] | None = None


class ProfiledStep(msgspec.Struct, frozen=True):
    run_step: int  # 0-based index into step_seconds
    profiler_step: int  # its ProfilerStep#N in the traces


class RunFlags(msgspec.Struct, frozen=True, kw_only=True):
    """The harness's flags as a run ran with them (instrumented_train/config.py RunConfig, every
    field of which is here: tests/harness/test_config.py). A flag a newer harness adds is read
    past, not refused; one a record lacks is None (precision: fp32, the harness's default)."""

    strategy: str | None = None
    preset: str | None = None
    seq_len: int | None = None
    micro_batch: int | None = None
    grad_accum: int | None = None
    baseline_steps: int | None = None
    wait: int | None = None
    warmup: int | None = None
    active: int | None = None
    lr: float | None = None
    seed: int | None = None
    bucket_cap_mb: float | None = None
    precision: str = "fp32"
    device: str | None = None
    threads: int | None = None
    record_shapes: bool | None = None
    out: str | None = None
    force: bool | None = None
    store: str | None = None


class RunRecord(msgspec.Struct, frozen=True):
    record_version: int
    strategy: str  # a name of traceview/strategies.py
    world_size: int
    num_params: int
    config: RunFlags
    global_batch: GlobalBatch
    ranks: list[RankRecord]
    model: dict[str, object] = msgspec.field(default_factory=dict)
    throughput: Throughput | None = None
    profiler_overhead: ProfilerOverhead | None = None
    step_seconds: list[float] = msgspec.field(default_factory=list)  # every step of the run
    profiled_steps: list[ProfiledStep] = msgspec.field(default_factory=list)
    ddp_buckets: list[Bucket] | None = None
    backend: str | None = None
    torch_version: str | None = None
    nccl_version: str | None = None
    hosts: list[str] = msgspec.field(default_factory=list)
    run_id: str | None = None  # the launch, the same on every rank (TraceRun.run_id)
    machine: MachineLoad | None = None  # added by a sweep after the run


# The harness also writes the run's identity into every trace (torch.profiler's
# add_metadata_json under this key), so that a trace carried away from its folder still says
# which run it belongs to.
TRACE_METADATA_KEY = "traceview_run"


class TraceRun(msgspec.Struct, frozen=True):
    strategy: str
    world_size: int
    config: RunFlags = msgspec.field(default_factory=RunFlags)
    # Traces written before the version was carried hold these same fields: version 1.
    record_version: int = 1
    # The launch every rank of the run shares: the rendezvous id and a token rank 0 drew for
    # it. Ranks written on different hosts, into each host's folder, are one run by it.
    run_id: str | None = None


def trace_run(value: object) -> tuple[TraceRun | None, str | None]:
    """A trace's run identity, or None with the reason it is not usable (None, None: absent)."""
    if value is None:
        return None, None
    try:
        run = msgspec.convert(value, TraceRun)
    except (msgspec.ValidationError, RecursionError) as e:
        return None, f"{TRACE_METADATA_KEY} is not usable ({e})"
    if run.record_version > RECORD_VERSION:
        return None, (
            f"{TRACE_METADATA_KEY} record_version {run.record_version} is newer than this "
            f"traceview reads ({RECORD_VERSION}): ignored"
        )
    return run, None


def _decode(path: Path, kind: type[T], what: str) -> T:
    try:
        return msgspec.json.decode(path.read_bytes(), type=kind)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError) as e:
        raise TraceviewError(f"{path}: not a {what} ({e})") from None
    except OSError as e:
        raise unreadable(path, e) from None


def read_run_record(folder: Path) -> RunRecord | None:
    """The folder's run.json, or None when it has none. A broken one is an error."""
    path = folder / RUN_RECORD
    if not path.is_file():
        return None
    record = _decode(path, RunRecord, "run record")
    if problem := _impossible(record):
        raise TraceviewError(f"{path}: not a run record ({problem})")
    return record


def _impossible(record: RunRecord) -> str | None:
    if record.record_version > RECORD_VERSION:
        return (
            f"record_version {record.record_version}, newer than this traceview reads "
            f"({RECORD_VERSION}): upgrade traceview"
        )
    if record.record_version < 1:
        return f"record_version {record.record_version}"
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
        steps = f"after {counted(status.steps_done, 'step')}"
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
        said.append(f"{counted(unreadable, 'account')} unreadable")
    return "incomplete run (no run.json): " + "; ".join(said)


class SweepPoint(msgspec.Struct, frozen=True):
    """One point of a sweep's index.json (instrumented_train/sweep.py writes it)."""

    path: str  # the run folder, relative to the sweep folder
    status: str  # ok, failed, interrupted
    strategy: str | None = None
    dp: int | None = None
    exit_code: int | None = None
    log: str | None = None  # relative to the sweep folder


class SweepIndex(msgspec.Struct, frozen=True):
    runs: list[SweepPoint]


def read_sweep_index(path: Path) -> list[tuple[Path, str | None]]:
    """The sweep's points — its own subfolders, nothing elsewhere — each with why it did not
    finish (None for a run that succeeded)."""
    index = _decode(path, SweepIndex, "sweep index")
    folder = path.parent
    points = []
    for point in index.runs:
        run = folder / point.path
        if not run.resolve().is_relative_to(folder.resolve()):
            raise TraceviewError(f"{path}: lists a run outside its folder: {run}")
        why = None
        if point.status != "ok":
            exit_code = "" if point.exit_code is None else f", exit {point.exit_code}"
            log = f"; its log: {folder / point.log}" if point.log else ""
            why = f"the sweep's point {point.status}{exit_code}: not analysed{log}"
        points.append((run, why))
    return points
