"""An `on_trace_ready` handler for your own torch.profiler: each rank writes its trace, and with
a store its Parquet partition too, where it runs — parsing spread over the training nodes.

    from torch.profiler import ProfilerActivity, profile, schedule
    import traceview.profiler

    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
        record_shapes=True,  # message sizes
        on_trace_ready=traceview.profiler.handler("traces/my-run", store="store"),
    ) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()

torch is imported only when a trace is ready: traceview itself does not need it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from traceview.errors import TraceviewError
from traceview.loader.ingest import ingest_one
from traceview.loader.sources import RunSource
from traceview.store.pack import PACK_FROM_RANKS


def trace_name(rank: int) -> str:
    return f"rank{rank}.pt.trace.json.gz"


def job_name(folder: str | Path) -> str:
    """The job a run folder is in a store: its name (see RunSource.job)."""
    return RunSource(Path(folder), ()).job


def current_rank() -> int:
    """This process's rank: from torch.distributed when it is set up, else torchrun's RANK."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def handler(
    folder: str | Path,
    *,
    store: str | Path | None = None,
    job: str | None = None,
    comm_pattern: str | None = None,
    on_written: Callable[[str], None] | None = None,
    pack_from: int | None = PACK_FROM_RANKS,
) -> Callable[[Any], None]:
    """For `torch.profiler.profile(on_trace_ready=...)`: writes `folder/rank<N>.pt.trace.json.gz`
    (whole or not at all: written under a hidden name, then renamed) and, with `store`, the
    rank's partition of job `job` (default: the folder's name). `on_written(name)` is told of
    each file once it is whole. With a schedule that repeats, each cycle replaces the last.
    A trace that cannot be stored is said on stderr; training goes on.

    A job of `pack_from` ranks or more (None: never) is packed once its last rank is stored
    (docs/store.md, "Packed jobs"): the rank that stored it starts `traceview pack` in a
    process of its own, and trains on."""
    out = Path(folder)
    job = job or job_name(out)

    def ready(prof: Any) -> None:
        out.mkdir(parents=True, exist_ok=True)
        target = out / trace_name(current_rank())
        # The .gz suffix makes the profiler compress; the leading dot hides it from readers.
        partial = target.with_name(f".{target.name}.partial.gz")
        try:
            prof.export_chrome_trace(str(partial))
            os.replace(partial, target)
        except BaseException:
            partial.unlink(missing_ok=True)  # a full disk is not made fuller by a part
            raise
        if on_written:
            on_written(target.name)
        if store is not None:
            try:
                stored = ingest_one(target, store, job, comm_pattern)
            except TraceviewError as e:
                sys.stderr.write(f"traceview: {target} not stored: {e.message}\n")
                return
            completes = stored.completes
            if pack_from is not None and completes is not None and completes >= pack_from:
                pack_aside(store, job)

    return ready


# The packs this process started, held until they end: then reaped, not left as zombies.
_PACKING: list[subprocess.Popen[bytes]] = []


def pack_aside(store: str | Path, job: str) -> None:
    """`traceview pack STORE --job JOB` in a session of its own: packing a job of thousands
    of ranks takes a minute that the training need not wait (its errors go to this process's
    stderr; a pack stopped midway leaves the job as it was)."""
    _PACKING[:] = [p for p in _PACKING if p.poll() is None]
    command = [sys.executable, "-m", "traceview", "pack", str(store), "--job", job]
    try:
        packing = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
        )
    except OSError as e:  # training goes on; the job reads as partitions until packed
        sys.stderr.write(f"traceview: could not start packing ({e}): run traceview pack "
                         f"{store} --job {job}\n")  # fmt: skip
        return
    _PACKING.append(packing)
