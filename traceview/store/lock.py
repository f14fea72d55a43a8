"""One writer at a time changes what is in place in a store (docs/store.md).

Writers parse on their own, into folders of their own under `.incoming`; only moving partitions
into place and updating a job's record happen under the store's writer lock, an advisory lock
(`flock`) on `STORE/.writer.lock`. The kernel releases it when its holder exits, however it
exits (kill -9 included), so a crashed writer never leaves the store locked. The lock file
names its holder (pid, host, since when), for the message a waiting writer gives.

Readers take the same lock shared while they read a job (`reading`): a commit waits for them,
and they for it, so what a reader gets is one commit's job, never one rank's totals from one
ingest and its steps from the next.

Each writer's own folder under `.incoming` is locked the same way for as long as it lives, so
the next writer can tell a folder a crashed writer left (removed) from one still being written.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

from traceview.errors import TraceviewError
from traceview.remote import is_remote
from traceview.store.layout import INCOMING, PACK, cannot_write

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; one writer at a time is the user's to keep
    fcntl = None  # type: ignore[assignment]

WRITER_LOCK = ".writer.lock"
WAIT_S = 600.0  # how long a writer waits for another one's commit before giving up
_POLL_S = 0.05


def holder_of(path: Path) -> str:
    """Who holds the lock at `path`, as its holder wrote it."""
    try:
        said = json.loads(path.read_text())
        return f"pid {said['pid']} on {said['host']}, since {time.ctime(said['since'])}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a writer that has not said who it is"


@contextmanager
def held(
    path: Path,
    *,
    wait_s: float = WAIT_S,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """The exclusive lock on `path` (made if need be), held for the block. Waits up to `wait_s`
    for its holder (`on_wait(holder)` once, when it starts waiting), then refuses in one line."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as e:
        raise cannot_write(path.parent, e) from None
    try:
        _acquire(fd, path, wait_s, on_wait, fcntl.LOCK_EX if fcntl else 0)
        with suppress(OSError):  # who holds it, for the message a waiting writer gives
            os.ftruncate(fd, 0)
            who = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
            os.pwrite(fd, json.dumps(who).encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _acquire(
    fd: int, path: Path, wait_s: float, on_wait: Callable[[str], None] | None, kind: int
) -> None:
    if fcntl is None:
        return
    deadline = time.monotonic() + wait_s
    waiting = False
    while True:
        try:
            fcntl.flock(fd, kind | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        except OSError as e:  # a file system without locks
            raise TraceviewError(
                f"{path}: cannot lock ({e.strerror or e}); the store needs a file system with "
                "locks (flock)"
            ) from None
        if time.monotonic() >= deadline:
            raise TraceviewError(
                f"{path.parent}: a writer holds the store ({holder_of(path)}); "
                "try again when it is done"
            )
        if not waiting and on_wait is not None:
            on_wait(holder_of(path))
        waiting = True
        time.sleep(_POLL_S)


@contextmanager
def reading(
    stores: Iterable[Path], *, on_wait: Callable[[str], None] | None = None
) -> Iterator[None]:
    """The writer lock of each store, shared, for the block: no commit changes what is read
    meanwhile (a commit in progress is waited for, as a writer waits). A store whose lock
    cannot be opened (read-only, and never written by this traceview) has no writer to wait
    for."""
    with ExitStack() as held_here:
        for store in sorted(set(stores), key=str):
            if is_remote(store):  # object storage has no locks: its hashes name a torn read
                continue
            path = store / WRITER_LOCK
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW, 0o666)
            except OSError:
                try:
                    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
                except OSError:
                    continue
            held_here.callback(os.close, fd)
            if fcntl is not None:
                _acquire(fd, path, WAIT_S, on_wait, fcntl.LOCK_SH)
        yield


def is_held(path: Path) -> bool:
    """Whether some live process holds the lock at `path` (False where there is no file)."""
    if fcntl is None:
        return True  # cannot tell: assume it is in use
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


@contextmanager
def writer(store: Path, *, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """The store's writer lock, for changing what is in place; what crashed writers left
    behind is cleared first (only a holder of this lock makes it)."""
    with held(store / WRITER_LOCK, on_wait=on_wait):
        _remove_leftovers(store)
        yield


@contextmanager
def own_folder(store: Path) -> Iterator[Path]:
    """A folder of this writer's own under `.incoming`, locked while it lives and removed
    after: partitions are written there, then moved into place under the writer lock."""
    base = store / INCOMING
    name = uuid.uuid4().hex
    try:
        base.mkdir(exist_ok=True)
        fd = os.open(base / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as e:
        raise cannot_write(store, e) from None
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # before the folder exists: never seen unlocked
        folder = base / name
        try:
            folder.mkdir()
        except OSError as e:
            raise cannot_write(store, e) from None
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            with suppress(OSError):
                (base / f"{name}.lock").unlink()
    finally:
        os.close(fd)
        with suppress(OSError):
            base.rmdir()  # unless another writer is writing there


def _remove_leftovers(store: Path) -> None:
    """Folders writers that were killed left: their own `.incoming` folders (no longer locked)
    and partitions they had moved aside to replace (`.rank=N.old-…`; the next ingest makes
    the partition again)."""
    base = store / INCOMING
    if base.is_dir():
        for folder in base.iterdir():
            if folder.is_dir() and not is_held(base / f"{folder.name}.lock"):
                shutil.rmtree(folder, ignore_errors=True)
                with suppress(OSError):
                    (base / f"{folder.name}.lock").unlink()
    for job in store.glob("job=*"):
        for aside in job.glob(".rank=*.old-*"):
            shutil.rmtree(aside, ignore_errors=True)
        for aside in job.glob(f".{PACK}.old-*"):  # the only copy of its ranks, unless replaced
            if (job / PACK).exists():
                shutil.rmtree(aside, ignore_errors=True)
            else:
                with suppress(OSError):
                    aside.rename(job / PACK)
        shutil.rmtree(job / INCOMING, ignore_errors=True)  # where earlier traceviews wrote theirs
