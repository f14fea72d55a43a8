"""The run folder's life. Checked on every rank before any process group starts; written
beside a previous run, never over it, and swapped in only when the run succeeded; left marked
incomplete when it did not, with each rank's own account (`rank<N>.status.json`: how far it got,
what it wrote, why it stopped). Nothing the harness did not write is ever deleted."""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from instrumented_train.config import ConfigError

# What the harness writes into a run folder, and nothing else.
_HARNESS_FILE = re.compile(
    r"^(?:run\.json|rank\d+\.pt\.trace\.json\.gz|\.rank\d+\.pt\.trace\.json\.gz\.partial\.gz"
    r"|rank\d+\.status\.json|\.rank\d+\.status\.json\.\w+)$"
)
INCOMING = ".incoming"  # suffix of the folder a run writes while a previous run stays in place


def is_harness_file(name: str) -> bool:
    return _HARNESS_FILE.match(name) is not None


def status_path(folder: Path, rank: int) -> Path:
    return folder / f"rank{rank}.status.json"


def foreign_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not is_harness_file(p.name))


def place_of(out: Path) -> Path:
    """Where --out is: absolute, its links followed (a link to a run is replaced at the run it
    points to, and stays a link)."""
    return out.resolve()


def check_out_folder(out: Path, force: bool) -> None:
    """Every rank checks before any rank writes: an existing run is kept unless --force, a
    folder holding anything the harness did not write is never replaced (nor one this command
    runs in), nor written beside through an `.incoming` folder holding anything else, and the
    place must be writable. `out` is as place_of gives it."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} exists and is not a folder")
    if out.exists() and any(out.iterdir()):
        if not force:
            raise ConfigError(f"--out {out} already exists; choose another folder or pass --force")
        _refuse_foreign(out, "not replacing it")
        refuse_the_folder_run_in(out)
        incoming = writing_folder(out)
        refuse_a_link(incoming)
        if incoming.exists():
            if not incoming.is_dir():
                raise ConfigError(f"{incoming} exists and is not a folder; not writing there")
            _refuse_foreign(incoming, "not writing there")
    check_writable(out)


def refuse_the_folder_run_in(out: Path) -> None:
    """Replacing the folder this command runs in (or one holding it) would pull it from under
    the user's shell; `out` as place_of gives it."""
    if Path.cwd().resolve().is_relative_to(out):
        raise ConfigError(
            f"--out {out} is the folder this command runs in (or holds it); not replacing it: "
            "run from another folder"
        )


def refuse_a_link(incoming: Path) -> None:
    """The folder a run writes beside the old one is never a link: clearing it out, and
    writing there, would happen to whatever it points to (another run)."""
    if incoming.is_symlink():
        raise ConfigError(
            f"{incoming} is a link (to {os.readlink(incoming)}); not writing through it: "
            "remove the link and run again"
        )


def _refuse_foreign(folder: Path, what: str) -> None:
    foreign = foreign_files(folder)
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise ConfigError(f"{folder} holds files the harness did not write ({shown}); {what}")


def check_writable(out: Path) -> None:
    """`out` can be made: its nearest existing ancestor is a folder we can write in."""
    existing = next(p for p in (out, *out.parents) if p.exists())
    if not existing.is_dir():
        raise ConfigError(f"--out {out}: {existing} is not a folder")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        Path(tempfile.mkdtemp(prefix=".write-check-", dir=out.parent)).rmdir()
    except OSError as e:
        raise ConfigError(f"--out {out}: cannot write there ({e.strerror or e})") from None


def writing_folder(out: Path) -> Path:
    """Where the ranks write: the run folder itself when it holds nothing yet; else a sibling,
    `<out>.incoming`, that replaces it once the run has succeeded. Decided by every rank
    before any of them creates anything, so they agree."""
    if out.exists() and any(out.iterdir()):
        return out.with_name(out.name + INCOMING)
    return out


def prepare(folder: Path) -> None:
    """(One rank per node.) An `.incoming` folder left by an earlier failed attempt goes first,
    if it holds only the harness's files."""
    if folder.name.endswith(INCOMING) and folder.exists():
        _remove_run(folder)
    folder.mkdir(parents=True, exist_ok=True)


def commit(folder: Path, out: Path) -> None:
    """(One rank per node, after every rank finished.) Make `folder` the run at `out`: the
    rank status files go (run.json says it all), and a previous run is swapped out and
    removed. On a shared file system the first node does it and the others find it done."""
    for status in folder.glob("rank*.status.json"):
        status.unlink(missing_ok=True)
    if folder == out or not folder.exists():
        return
    old = out.with_name(f".{out.name}.replaced-{os.getpid()}")
    try:
        os.rename(out, old)
    except FileNotFoundError:
        old = None  # type: ignore[assignment]
    try:
        os.rename(folder, out)
    except OSError:
        if old is not None and not out.exists():
            os.rename(old, out)  # another node got there first, or the swap failed: undo
        return
    if old is not None:
        _remove_run(old)


def _remove_run(folder: Path) -> None:
    """Delete the harness's files in `folder`, then the folder if nothing else is in it."""
    for p in folder.iterdir():
        if is_harness_file(p.name) and p.is_file():
            p.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()


# Room kept for a rank's account: it is rewritten in place there, so the last word (a disk
# filled by the traces, say) still fits where nothing new can be written.
STATUS_ROOM = 4096


class RankStatus:
    """This rank's own account of the run, rewritten whole at each change: first written beside
    and renamed into place with room to spare, then rewritten in that room."""

    def __init__(self, folder: Path, rank: int, host: str) -> None:
        self.path = status_path(folder, rank)
        self._fd: int | None = None
        self.record: dict[str, Any] = {
            "rank": rank,
            "host": host,
            "pid": os.getpid(),
            "state": "running",  # running, done, failed, stopped
            "steps_done": 0,
            "wrote": [],
            "reason": None,
            "updated": None,
        }
        self._write()

    def step_done(self, steps: int) -> None:
        self.record["steps_done"] = steps
        self._write()

    def wrote(self, name: str) -> None:
        self.record["wrote"].append(name)
        self._write()

    def finish(self, state: str, reason: str | None = None) -> None:
        self.record.update(state=state, reason=reason)
        self._write()

    def _write(self) -> None:
        self.record["updated"] = time.time()
        text = (json.dumps(self.record, indent=1) + "\n").encode()
        with contextlib.suppress(OSError):  # an account that cannot be written is no reason to stop
            if self._fd is not None and len(text) <= STATUS_ROOM:
                os.pwrite(self._fd, text.ljust(STATUS_ROOM), 0)  # blank after: still JSON
                return
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
            tmp.write_bytes(text.ljust(STATUS_ROOM))
            os.replace(tmp, self.path)
            if self._fd is not None:
                os.close(self._fd)
            self._fd = os.open(self.path, os.O_WRONLY)
