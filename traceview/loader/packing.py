"""`traceview pack`: a store's jobs packed on demand (store/pack.py), under its writer lock (in
a bucket: under its lease, in a stage on disk, then published: store/bucket.py)."""

from __future__ import annotations

from pathlib import Path

from traceview.errors import TraceviewError
from traceview.store import layout
from traceview.store.bucket import open_to_write, writing
from traceview.store.pack import pack_job


def pack_store(store: str | Path, job: str | None = None) -> tuple[Path, dict[str, int]]:
    """The store, and per job packed (`job`, or every job) how many ranks its pack holds (0:
    nothing to pack)."""
    root = open_to_write(store, create=False)
    names = layout.jobs(root)
    if job is not None:
        if job not in names:
            raise TraceviewError(f"no job named {job!r} in {root}")
        names = [job]
    with writing(root) as place, place.committing(names):
        return root, {name: pack_job(place.target, name, place.incoming) for name in names}
