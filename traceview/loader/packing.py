"""`traceview pack`: a store's jobs packed on demand (store/pack.py), under its writer lock (in
a bucket: under its lease, in a stage on disk, then published: store/bucket.py)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from traceview.errors import TraceviewError
from traceview.remote import is_url
from traceview.store import layout, lock
from traceview.store.bucket import open_bucket_store, staged
from traceview.store.pack import pack_job


def pack_store(store: str | Path, job: str | None = None) -> tuple[Path, dict[str, int]]:
    """The store, and per job packed (`job`, or every job) how many ranks its pack holds (0:
    nothing to pack)."""
    in_bucket = is_url(store)
    root = open_bucket_store(str(store)) if in_bucket else layout.open_store(Path(store))
    if in_bucket and not (root / layout.MARKER).is_file():
        raise TraceviewError(f"{store}: not a traceview store (no {layout.MARKER})")
    names = layout.jobs(root)
    if job is not None:
        if job not in names:
            raise TraceviewError(f"no job named {job!r} in {root}")
        names = [job]
    with ExitStack() as stack:
        bucket = stack.enter_context(staged(root)) if in_bucket else None
        target = bucket.stage if bucket is not None else root
        incoming = stack.enter_context(lock.own_folder(target))
        stack.enter_context(bucket.committing(names) if bucket else lock.writer(root))
        return root, {name: pack_job(target, name, incoming) for name in names}
