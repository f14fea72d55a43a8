"""A store in a bucket (docs/store.md "A store in a bucket"). Object storage has no locks and
no rename; it has objects written whole and conditional writes (If-None-Match, If-Match), and
a commit there is made of those:

- A writer parses into a store of its own on local disk (its stage), as on disk.
- To commit, it takes the store's lease, `STORE/.writer.lease`: an object written only where
  there is none (or, past the time its holder gave, only over the one read), which names its
  holder and until when it holds it, renewed while held. A writer that finds it held waits.
- Under the lease it copies each job it changes into the stage as the bucket holds it now,
  commits there as on disk, packs the job whole, and publishes it: the pack into a new folder
  (`pack-<id>`, never written again), the run record, then `job.json`, one object that names
  that folder, written only if it is still the one copied. Readers read `job.json` first, so
  they read one commit's job or the next one's. The pack before is kept (a reader that read
  `job.json` before the commit reads on); older ones are removed.
- A writer killed anywhere leaves the job as the last commit left it (and maybe a pack no
  record names, removed by the next commit); its lease runs out and the next writer takes it.
  Two writers whose leases overlapped (one stalled past its lease) cannot both commit over one
  job record: the second is refused and its ingest changes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

import msgspec

from traceview.errors import TraceviewError
from traceview.parse.run_record import RUN_RECORD
from traceview.remote import as_path, is_remote, is_url
from traceview.store import layout, lock

LEASE = ".writer.lease"
LEASE_S = 30.0  # a lease its holder stops renewing (killed, stalled) is free after this
WAIT_S = 600.0  # how long a writer waits for another one's lease, as for the lock on disk
_POLL_S = 0.5
_PROTOCOLS = ("s3", "s3a")  # conditional writes: S3 and what speaks its API


class Conflict(Exception):
    """A conditional write found the object otherwise than it was told."""


def open_bucket_store(url: str) -> Path:
    """The store at `url` in a bucket, checked as open_store checks one (made at its first
    commit)."""
    protocol = url.split("://", 1)[0].lower()
    if protocol not in _PROTOCOLS:
        raise TraceviewError(
            f"{url}: a store is written in an S3 bucket (or an endpoint with S3's conditional "
            f"writes), not {protocol}://: ingest into a store on disk, then copy it there"
        )
    root = as_path(url.rstrip("/"))
    if _Objects(root).get(layout.MARKER) is not None:  # (a bucket that is not there: said now)
        layout.open_store(root)
    return root


class _Objects:
    """The store's objects, by name below its root: read, written (conditionally), listed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fs: Any = root.fs  # type: ignore[attr-defined]
        self.bucket, _, self.prefix = root.path.partition("/")  # type: ignore[attr-defined]

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def path(self, name: str) -> str:
        return f"{self.bucket}/{self.key(name)}"

    def get(self, name: str) -> tuple[bytes, str] | None:
        """The object's bytes and ETag, read in one request (None: there is none)."""
        from fsspec.asyn import sync

        async def read() -> tuple[bytes, str]:
            got = await self.fs._call_s3("get_object", Bucket=self.bucket, Key=self.key(name))
            try:
                return await got["Body"].read(), got["ETag"]
            finally:
                got["Body"].close()

        try:
            return sync(self.fs.loop, read)
        except FileNotFoundError as e:
            if _code(e) == "NoSuchBucket":
                raise TraceviewError(
                    f"{self.root}: no bucket {self.bucket!r} at this endpoint: create it, or "
                    "check the URL and AWS_ENDPOINT_URL"
                ) from None
            return None
        except OSError as e:
            raise self.refused(e, "read") from None

    def put(self, name: str, data: bytes, *, if_match: str | None = None,
            if_absent: bool = False) -> str:  # fmt: skip
        """Write the object whole, only where it is `if_match` (its ETag) or absent; its ETag."""
        condition = {"IfMatch": if_match} if if_match else {"IfNoneMatch": "*"} if if_absent else {}
        try:
            done = self.fs.call_s3(
                "put_object", Bucket=self.bucket, Key=self.key(name), Body=data, **condition
            )
        except OSError as e:
            if condition and _failed_condition(e):
                raise Conflict(name) from None
            raise self.refused(e, "write") from None
        self.fs.invalidate_cache(self.path(name))
        return str(done["ETag"])

    def delete(self, name: str, *, if_match: str | None = None) -> None:
        condition = {"IfMatch": if_match} if if_match else {}
        with suppress(FileNotFoundError):
            self.fs.call_s3("delete_object", Bucket=self.bucket, Key=self.key(name), **condition)
        self.fs.invalidate_cache(self.path(name))

    def listed(self, name: str) -> list[str]:
        """The names just below `name` (a folder), refreshed."""
        try:
            found = self.fs.ls(self.path(name), detail=False, refresh=True)
        except FileNotFoundError:
            return []
        return sorted(str(p).rstrip("/").rsplit("/", 1)[-1] for p in found)

    def upload(self, local: Path, name: str) -> None:
        try:
            self.fs.put_file(str(local), self.path(name))
        except OSError as e:
            raise self.refused(e, "write") from None

    def refused(self, e: OSError, what: str) -> TraceviewError:
        """What the storage said of a read or write (no right to it, say), in one line."""
        return TraceviewError(
            f"{self.root}: object storage refused the {what} ({type(e).__name__}: {e}): check "
            "the bucket, the endpoint and the credentials (for S3: AWS_ENDPOINT_URL, "
            "AWS_PROFILE, ~/.aws)"
        )

    def download(self, name: str, local: Path) -> None:
        local.parent.mkdir(parents=True, exist_ok=True)
        self.fs.get_file(self.path(name), str(local))

    def remove(self, name: str) -> None:
        with suppress(FileNotFoundError):
            self.fs.rm(self.path(name), recursive=True)
        self.fs.invalidate_cache(self.path(name))


def _code(e: BaseException) -> str | None:
    """The S3 error code behind an error s3fs translated (NoSuchBucket, PreconditionFailed)."""
    response = getattr(e.__cause__, "response", None) or {}
    return response.get("Error", {}).get("Code")


def _failed_condition(e: BaseException) -> bool:
    return isinstance(e, FileExistsError) or _code(e) in (
        "PreconditionFailed", "412", "ConditionalRequestConflict", "409",
    )  # fmt: skip


class _Lease:
    """The store's lease, held: renewed by a thread of its own every third of LEASE_S."""

    def __init__(self, objects: _Objects, etag: str, who: dict[str, Any]) -> None:
        self.objects, self.etag, self.who = objects, etag, who
        self.lost: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        while not self._stop.wait(LEASE_S / 3):
            try:
                self.etag = self.objects.put(LEASE, _lease_body(self.who), if_match=self.etag)
            except Conflict:
                self.lost = "another writer took the store's lease (this one ran past it)"
                return
            except Exception as e:
                self.lost = f"its lease could not be renewed ({type(e).__name__}: {e})"
                return

    def check(self) -> None:
        if self.lost is not None:
            raise TraceviewError(f"{self.objects.root}: {self.lost}")

    def release(self) -> None:
        self._stop.set()
        self._thread.join()
        with suppress(Exception):  # a lease left is free LEASE_S later
            self.objects.delete(LEASE, if_match=self.etag)


def _lease_body(who: dict[str, Any]) -> bytes:
    return json.dumps({**who, "until": time.time() + LEASE_S}).encode()


def _holder(data: bytes) -> tuple[str, float]:
    try:
        said = json.loads(data)
        return f"pid {said['pid']} on {said['host']}, since {time.ctime(said['since'])}", float(
            said["until"]
        )
    except (ValueError, KeyError, TypeError):
        return "a writer that has not said who it is", 0.0


@contextmanager
def _leased(objects: _Objects, on_wait: Callable[[str], None] | None) -> Iterator[_Lease]:
    who = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
    deadline = time.monotonic() + WAIT_S
    waiting = False
    while True:
        try:
            etag = objects.put(LEASE, _lease_body(who), if_absent=True)
            break
        except Conflict:
            pass
        held = objects.get(LEASE)
        if held is None:
            continue  # released meanwhile
        holder, until = _holder(held[0])
        if until < time.time():  # its holder stopped renewing it: taken over, once
            try:
                etag = objects.put(LEASE, _lease_body(who), if_match=held[1])
                break
            except Conflict:
                continue
        if time.monotonic() >= deadline:
            raise TraceviewError(
                f"{objects.root}: a writer holds the store ({holder}); try again when it is done"
            )
        if not waiting and on_wait is not None:
            on_wait(holder)
        waiting = True
        time.sleep(_POLL_S)
    lease = _Lease(objects, etag, who)
    try:
        yield lease
    finally:
        lease.release()


class _Copied(msgspec.Struct, frozen=True):
    """A job as the stage copied it from the bucket."""

    etag: str | None  # its job.json's (None: the bucket had no job record)
    record: layout.JobRecord | None  # as in the bucket
    staged: bytes  # the stage's job.json as copied (b"": none)
    run: bytes  # its run.json (b"": none)
    loose: dict[str, bytes]  # its ranks with partitions of their own: summary.json's bytes


class Staged:
    """A store in a bucket, and a store on local disk where its jobs are copied, committed and
    packed before they are published (`committing`)."""

    def __init__(self, root: Path, stage: Path) -> None:
        self.root, self.stage = root, stage
        self.objects = _Objects(root)
        self.copied: dict[str, _Copied] = {}

    def copy(self, job: str) -> None:
        """The job into the stage as the bucket holds it now (copied again only where its
        record changed since)."""
        folder = f"{layout.JOB_PREFIX}{job}"
        for attempt in range(3):  # a pack removed while copied: the commit after next did it
            got = self.objects.get(f"{folder}/{layout.JOB_RECORD}")
            etag = got[1] if got else None
            if job in self.copied and self.copied[job].etag == etag:
                return
            try:
                self.copied[job] = self._copy(job, folder, got)
                return
            except FileNotFoundError:
                if attempt == 2:
                    raise TraceviewError(
                        f"{self.root}: job {job} changed three times while it was copied: "
                        "run the ingest again"
                    ) from None

    def _copy(self, job: str, folder: str, got: tuple[bytes, str] | None) -> _Copied:
        local = layout.job_dir(self.stage, job)
        shutil.rmtree(local, ignore_errors=True)
        entries = self.objects.listed(folder)
        if got is None and not entries:
            return _Copied(None, None, b"", b"", {})
        local.mkdir(parents=True)
        record = None
        staged = b""
        if got is not None:
            try:
                record = msgspec.json.decode(got[0], type=layout.JobRecord)
            except (msgspec.DecodeError, msgspec.ValidationError):
                record = None  # a damaged record is written anew, as on disk
            if record is not None:
                staged = msgspec.json.encode(msgspec.structs.replace(record, pack=layout.PACK))
                (local / layout.JOB_RECORD).write_bytes(staged)
                if record.packed:
                    for name in self.objects.listed(f"{folder}/{record.pack}"):
                        self.objects.download(
                            f"{folder}/{record.pack}/{name}", local / layout.PACK / name
                        )
        run = b""
        if RUN_RECORD in entries:
            self.objects.download(f"{folder}/{RUN_RECORD}", local / RUN_RECORD)
            run = (local / RUN_RECORD).read_bytes()
        loose = {}
        for entry in entries:
            if entry.startswith("rank="):
                for name in self.objects.listed(f"{folder}/{entry}"):
                    self.objects.download(f"{folder}/{entry}/{name}", local / entry / name)
                with suppress(OSError):
                    loose[entry] = (local / entry / layout.SUMMARY).read_bytes()
        return _Copied(got[1] if got else None, record, staged, run, loose)

    def publish(self, job: str, lease: _Lease) -> bool:
        """(Under the lease.) The job as committed in the stage into the bucket; whether it
        changed."""
        copied = self.copied[job]
        folder = f"{layout.JOB_PREFIX}{job}"
        local = layout.job_dir(self.stage, job)
        record_path = local / layout.JOB_RECORD
        if not record_path.is_file():
            return False
        staged = record_path.read_bytes()
        run = (local / RUN_RECORD).read_bytes() if (local / RUN_RECORD).is_file() else b""
        if staged == copied.staged and run == copied.run:
            return False
        record = layout.read_job_record(self.stage, job)
        assert record is not None
        self._refuse_unpacked(job, local, copied)
        before = copied.record
        pack = before.pack if before is not None and before.packed else None
        digests = record.summaries.get(layout.PACK, ())
        made = None
        if record.packed and (before is None or before.summaries.get(layout.PACK) != digests):
            made = f"{layout.PACK_IN_BUCKET}{uuid.uuid4().hex[:16]}"
            for file in sorted((local / layout.PACK).iterdir()):  # the summaries last
                lease.check()
                self.objects.upload(file, f"{folder}/{made}/{file.name}")
        if run and run != copied.run:
            self.objects.upload(local / RUN_RECORD, f"{folder}/{RUN_RECORD}")
        summaries = record.summaries
        if made is not None and before is not None and pack is not None:  # the one before too
            summaries = {
                **summaries,
                layout.PACK: (*digests, *before.summaries.get(layout.PACK, ())[:1]),
            }
        out = msgspec.structs.replace(record, pack=made or pack or layout.PACK, summaries=summaries)
        packed_now = [e for e in copied.loose if e not in {p.name for p in _loose(local)}]
        during = out
        if packed_now and before is not None:  # their summaries accepted until they are gone
            gone = {e.removeprefix("rank="): before.summaries.get(e.removeprefix("rank="), ())
                    for e in packed_now}  # fmt: skip
            during = msgspec.structs.replace(out, summaries={**gone, **out.summaries})
        lease.check()
        try:
            etag = self._put_record(folder, during, copied.etag)
        except Conflict:
            if made is not None:
                self.objects.remove(f"{folder}/{made}")
            raise TraceviewError(
                f"{self.root}: another writer committed job {job} while this one did (its lease "
                "ran out first): this ingest changed nothing of it; run it again"
            ) from None
        if packed_now:
            for entry in packed_now:
                self.objects.remove(f"{folder}/{entry}")
            etag = self._put_record(folder, out, etag)
        for entry in self.objects.listed(folder):  # packs no reader will read again
            if layout.is_pack_name(entry) and entry not in (made, pack):
                self.objects.remove(f"{folder}/{entry}")
        staged_now = msgspec.json.encode(msgspec.structs.replace(out, pack=layout.PACK))
        record_path.write_bytes(staged_now)
        self.copied[job] = _Copied(etag, out, staged_now, run, {
            p.name: (p / layout.SUMMARY).read_bytes() for p in _loose(local)
        })  # fmt: skip
        return True

    def _put_record(self, folder: str, record: layout.JobRecord, etag: str | None) -> str:
        return self.objects.put(
            f"{folder}/{layout.JOB_RECORD}",
            msgspec.json.encode(record),
            if_match=etag,
            if_absent=etag is None,
        )

    def _refuse_unpacked(self, job: str, local: Path, copied: _Copied) -> None:
        """A rank of this commit that is not in the pack (the pack copied could not be read
        back to add it): the bucket keeps no partition that a commit would have to rewrite."""
        for place in _loose(local):
            summary = (place / layout.SUMMARY).read_bytes()
            if copied.loose.get(place.name) != summary:
                raise TraceviewError(
                    f"{self.root}/{layout.JOB_PREFIX}{job}: its pack cannot be read back to "
                    f"add {place.name} to it (read the job to see why): this ingest changed "
                    "nothing of it; ingest the job into another store"
                )

    def mark(self) -> None:
        """(Under the lease.) The store's marker, made or brought to this version; a prefix
        holding other things is no store, as on disk."""
        got = self.objects.get(layout.MARKER)
        if got is None:
            foreign = [
                e
                for e in self.objects.listed("")
                if not (e.startswith((".", layout.JOB_PREFIX)) or e == layout.MARKER)
            ]
            if foreign:
                raise TraceviewError(
                    f"{self.root}: not a traceview store (holds {foreign[0]}); not writing there"
                )
        else:
            layout.open_store(self.root)  # a newer one is refused
            if got[0] == _marker():
                return
        with suppress(Conflict):
            self.objects.put(layout.MARKER, _marker(), if_match=got[1] if got else None,
                             if_absent=got is None)  # fmt: skip

    @contextmanager
    def committing(
        self, jobs: Sequence[str], on_wait: Callable[[str], None] | None = None
    ) -> Iterator[None]:
        """The lease held for the block, the jobs copied into the stage as the bucket holds
        them now first; what the block committed in the stage is published after (each job
        whole or not at all, in order)."""
        with _leased(self.objects, on_wait) as lease:
            self.mark()
            for job in jobs:
                self.copy(job)
            yield
            published: list[str] = []
            for job in jobs:
                try:
                    if self.publish(job, lease):
                        published.append(job)
                except TraceviewError as e:
                    done = f"{', '.join(published)} stored" if published else "no job stored"
                    raise TraceviewError(f"{e.message} ({done})") from None


@contextmanager
def staged(root: Path) -> Iterator[Staged]:
    """A stage for the store `root` in a bucket: a store in a temporary folder (TMPDIR), removed
    after."""
    folder = Path(tempfile.mkdtemp(prefix="traceview-stage-"))
    try:
        yield Staged(root, layout.open_store(folder / "store", create=True))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def open_to_write(store: str | Path, *, create: bool) -> Path:
    """The store a writer writes: a folder (made where `create`), or one in a bucket (made at
    its first commit where `create`, else it must be one already)."""
    if not is_url(store):
        return layout.open_store(Path(store), create=create)
    root = open_bucket_store(str(store))
    if not create and not (root / layout.MARKER).is_file():
        raise TraceviewError(f"{store}: not a traceview store (no {layout.MARKER})")
    return root


class Writing:
    """Where a writer puts what it parses, and how it commits it: the store itself, under its
    writer lock (store/lock.py); or, for a store in a bucket, a stage on disk, under the
    store's lease, published after (`Staged`)."""

    def __init__(self, root: Path, bucket: Staged | None, incoming: Path) -> None:
        self.root, self.bucket, self.incoming = root, bucket, incoming
        self.target = bucket.stage if bucket is not None else root  # where partitions go

    def copy(self, job: str) -> None:
        """The job as the store holds it, where this writer commits (in a bucket: copied)."""
        if self.bucket is not None:
            self.bucket.copy(job)

    def committing(
        self, jobs: Sequence[str], on_wait: Callable[[str], None] | None = None
    ) -> AbstractContextManager[None]:
        if self.bucket is not None:
            return self.bucket.committing(jobs, on_wait)
        return lock.writer(self.root, on_wait=on_wait)


@contextmanager
def writing(root: Path) -> Iterator[Writing]:
    """A writer's place for the block: its own folder under `.incoming` of the store, or of a
    stage for a store in a bucket."""
    with ExitStack() as stack:
        bucket = stack.enter_context(staged(root)) if is_remote(root) else None
        target = bucket.stage if bucket is not None else root
        yield Writing(root, bucket, stack.enter_context(lock.own_folder(target)))


def _marker() -> bytes:
    return msgspec.json.encode(layout.StoreMarker(layout.STORE_VERSION))


def _loose(job_folder: Path) -> list[Path]:
    return [p for p in job_folder.glob("rank=*") if (p / layout.SUMMARY).is_file()]
