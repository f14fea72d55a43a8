"""`traceview pack`: a store's jobs packed on demand (store/pack.py), under its writer lock."""

from __future__ import annotations

from pathlib import Path

from traceview.errors import TraceviewError
from traceview.remote import STORE_IN_A_BUCKET, STORE_ON_DISK, local_only
from traceview.store import layout, lock
from traceview.store.pack import pack_job


def pack_store(store: str | Path, job: str | None = None) -> tuple[Path, dict[str, int]]:
    """The store, and per job packed (`job`, or every job) how many ranks its pack holds (0:
    nothing to pack)."""
    local_only(store, STORE_ON_DISK, STORE_IN_A_BUCKET)
    root = layout.open_store(Path(store))
    names = layout.jobs(root)
    if job is not None:
        if job not in names:
            raise TraceviewError(f"no job named {job!r} in {root}")
        names = [job]
    with lock.own_folder(root) as incoming, lock.writer(root):
        return root, {name: pack_job(root, name, incoming) for name in names}
