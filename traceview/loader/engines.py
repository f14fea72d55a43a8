"""Where ingestion runs: "local" (a process per core: loader/workers.py map_in_processes) or
"ray" (one Ray task per trace, on a cluster or on this machine). Every worker must see the
traces and the store at the same paths: a shared file system (docs/store.md)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, TypeVar

from traceview.errors import TraceviewError

ENGINES = ("local", "ray")
R = TypeVar("R")


@contextmanager
def ray_session(
    address: str | None, on_ready: Callable[[str], None] | None = None
) -> Iterator[ModuleType]:
    """Ray, joined at `address` (or RAY_ADDRESS), else started on this machine for the call
    (and stopped after); a session already started is used. `on_ready` is told what starting
    or joining Ray cost."""
    try:
        import ray
    except ImportError:
        raise TraceviewError(
            "--engine ray needs Ray: pip install 'traceview[cluster]' (or ray)"
        ) from None
    started = not ray.is_initialized()
    begun = time.monotonic()
    local = address is None and not os.environ.get("RAY_ADDRESS")
    if started:
        extra: dict[str, Any] = {"include_dashboard": False} if local else {}
        # "local": a Ray of its own, never the cluster last started on this machine (which
        # ray.init() would join, gone or not, were it told no address).
        where = "local" if local else address
        try:
            ray.init(address=where, logging_level=logging.WARNING, log_to_driver=False, **extra)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise TraceviewError(f"cannot start or reach Ray ({address or 'local'}): {e}") from None
    if on_ready:
        how = "already running" if not started else "started here" if local else "joined"
        cpus = int(ray.cluster_resources().get("CPU", 0))
        on_ready(f"Ray {how} in {time.monotonic() - begun:.1f} s ({cpus} CPUs)")
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def map_on_ray(
    fn: Callable[..., R],
    tasks: Sequence[tuple[object, ...]],
    address: str | None = None,
    on_done: Callable[[int, int, R], None] | None = None,
    on_crash: Callable[[tuple[object, ...], str], R] | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> list[R]:
    """`fn(*task)` as one Ray task each (one CPU each: a worker holds one task at a time, one
    large trace or a few small ones); results in task order, on the cluster of `ray_session`.
    A task whose worker died (killed, out of memory, its node lost) is not tried again: it gets
    `on_crash(task, why)` (without it, the error is raised) and the others go on."""
    with ray_session(address, on_ready) as ray:
        remote = ray.remote(num_cpus=1, max_retries=0)(fn)
        refs = [remote.remote(*task) for task in tasks]
        index = {ref: i for i, ref in enumerate(refs)}
        results: dict[int, R] = {}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                try:
                    results[index[ref]] = ray.get(ref)
                except ray.exceptions.RayError as e:
                    if on_crash is None:
                        raise
                    results[index[ref]] = on_crash(tasks[index[ref]], why_failed(e))
                if on_done:
                    on_done(len(results), len(tasks), results[index[ref]])
        return [results[i] for i in range(len(tasks))]


def why_failed(error: Exception) -> str:
    """A Ray failure in a few words (its messages run to many lines)."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"failed in Ray ({type(error).__name__}{': ' + first[:160] if first else ''})"
