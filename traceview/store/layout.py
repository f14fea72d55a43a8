"""Where things live in a store (docs/store.md): one Parquet partition per rank of each
job, hive-style, so polars, DuckDB and Spark read the store as tables without traceview.

    STORE/store.json                      {"store_version": 5}
    STORE/job=<job>/job.json              where the job came from; why it is incomplete, if so
    STORE/job=<job>/run.json              the harness's run record, when the job has one
    STORE/job=<job>/rank=<r>/summary.json the rank's totals, notes and where its trace came from
    STORE/job=<job>/rank=<r>/steps.parquet      one row per profiler step (Breakdown columns)
    STORE/job=<job>/rank=<r>/calls.parquet      one row per collective call (CALLS_SCHEMA)
    STORE/job=<job>/rank=<r>/work.parquet       time per profiler step and name (WORK_SCHEMA)
    STORE/job=<job>/rank=<r>/intervals.parquet  the model (INTERVALS_SCHEMA)
    STORE/job=<job>/pack/summaries.json   a packed job's ranks' summaries, by rank
    STORE/job=<job>/pack/<table>.parquet  their tables, one file each, with a `rank` column
    (in a bucket, the pack's folder is `pack-<id>`, a new one per commit: store/bucket.py)

A job of many ranks is packed (store/pack.py): its partitions' files become the pack's few, so
a command reads a handful of files, not five per rank. Each rank lives in one place: its own
partition or the pack (a rank ingested after the pack was made is a partition until the next
pack; where both hold it, the partition is read). A rank in the pack is named as a partition
is, `job=<job>/pack/rank=<r>` (a place in the pack, not a folder).

`job` and `rank` are the partition keys: the tables do not repeat them. A trace that does not
name its rank is `rank=__HIVE_DEFAULT_PARTITION__` (null to every hive reader)."""

from __future__ import annotations

import contextlib
import re
import uuid
from pathlib import Path, PosixPath, WindowsPath

import msgspec

from traceview.errors import CannotWrite, TraceviewError, unreadable

# The store's layout, in store.json: 5: a job's ranks may be in its pack. A traceview that
# reads 4 would take a packed job's ranks for missing: it refuses a store of 5 instead.
STORE_VERSION = 5
# A partition's analysis, in its summary.json: 2: calls and intervals carry `elements`; FSDP's
# post-backward work is backward work. 3: each call's exposed share (`calls`). 4: each rank's
# time per step and name of work (`work`). A partition an older traceview wrote is not read
# (ingest makes it again).
PARTITION_VERSION = 4
MARKER = "store.json"
JOB_RECORD = "job.json"
SUMMARY = "summary.json"
TABLES = ("steps", "calls", "work", "intervals")  # RankReport's fields kept as Parquet tables
NO_RANK = "__HIVE_DEFAULT_PARTITION__"
INCOMING = ".incoming"  # each writer's partitions, before they are moved into place
PACK = "pack"  # a job's packed ranks (and, in its job record, the key of their summaries)
PACK_IN_BUCKET = f"{PACK}-"  # + an id: a pack in a bucket, which no commit ever rewrites
PACK_SUMMARIES = "summaries.json"
_JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")


class StoreMarker(msgspec.Struct, frozen=True):
    store_version: int


class StoredTrace(msgspec.Struct, frozen=True):
    """A trace an ingest of the job read: the rank whose partition it made, or why it failed
    (its rank is kept when an earlier ingest had stored it)."""

    trace: str  # absolute path, when ingested
    rank: int | None = None
    failed: str | None = None


class Shards(msgspec.Struct, frozen=True):
    """A job ingested in `of` shards (`ingest --shard K/N`, store/shards.py): the shards in so
    far, and how many trace files the run listed (so a shard given none is not waited for)."""

    of: int
    done: tuple[int, ...]
    listed: int


class JobRecord(msgspec.Struct, frozen=True):
    """job.json: where the job's traces were, why the run is incomplete, if it is, every trace
    its ingests read (what a reader compares the partitions it finds with), and, while it is
    ingested in shards, which are in."""

    source: str
    incomplete: str | None = None
    traces: tuple[StoredTrace, ...] = ()
    # Per partition (its rank key), the hashes of the summary.json it may hold: the one its
    # last commit put in place (and, while a commit moves partitions, the one before).
    summaries: dict[str, tuple[str, ...]] = {}
    shards: Shards | None = None  # None: ingested whole
    packed: tuple[str, ...] = ()  # the rank keys the job's pack holds (in `summaries`: PACK)
    pack: str = PACK  # the pack's folder: PACK on disk, PACK_IN_BUCKET + an id in a bucket


def read_job_record(store: Path, job: str) -> JobRecord | None:
    path = job_dir(store, job) / JOB_RECORD
    if not path.is_file():
        return None
    try:
        return msgspec.json.decode(path.read_bytes(), type=JobRecord)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise TraceviewError(f"{path}: not a job record ({e})") from None
    except OSError as e:
        raise unreadable(path, e) from None


def write_job_record(store: Path, job: str, record: JobRecord) -> None:
    write_atomically(job_dir(store, job) / JOB_RECORD, msgspec.json.encode(record))


def is_store(path: Path) -> bool:
    return (path / MARKER).is_file()


def open_store(path: Path, *, create: bool = False) -> Path:
    """The store at `path`, checked (made first when `create`): a newer layout is refused."""
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True)  # ranks of one job may race here
        except OSError as e:
            raise cannot_write(path, e) from None
        if not path.is_dir():
            raise TraceviewError(f"{path}: not a folder")
        if not is_store(path):
            foreign = [p.name for p in path.iterdir() if not _store_entry(p.name)]
            if foreign:
                raise TraceviewError(
                    f"{path}: a folder that is not a traceview store (holds {foreign[0]}); "
                    "not writing there"
                )
            _mark(path)
    if not is_store(path):
        raise TraceviewError(f"{path}: not a traceview store (no {MARKER})")
    try:
        marker = msgspec.json.decode((path / MARKER).read_bytes(), type=StoreMarker)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise TraceviewError(f"{path / MARKER}: not a store marker ({e})") from None
    except OSError as e:
        raise unreadable(path / MARKER, e) from None
    if marker.store_version > STORE_VERSION:
        raise TraceviewError(
            f"{path}: store_version {marker.store_version} is newer than this traceview reads "
            f"({STORE_VERSION}): upgrade traceview"
        )
    if create and marker.store_version < STORE_VERSION:
        _mark(path)  # what is written from now on is of this version
    return path


def _mark(path: Path) -> None:
    write_atomically(path / MARKER, msgspec.json.encode(StoreMarker(STORE_VERSION)))


JOB_PREFIX = "job="  # a job's folder in the store: job=<name> (Hive-style, for DuckDB)


def _store_entry(name: str) -> bool:
    return name.startswith((".", JOB_PREFIX)) or name == MARKER


def check_job_name(name: str) -> str:
    if not _JOB_NAME.match(name):
        raise TraceviewError(
            f"job name {name!r}: use letters, digits, '.', '_', '+' and '-' (at most 200)"
        )
    return name


def job_dir(store: Path, job: str) -> Path:
    return store / f"{JOB_PREFIX}{job}"


def rank_key(rank: int | None) -> str:
    return NO_RANK if rank is None else str(rank)


def partition_dir(store: Path, job: str, rank: int | None) -> Path:
    return job_dir(store, job) / f"rank={rank_key(rank)}"


def jobs(store: Path) -> list[str]:
    """The store's job names, sorted."""
    return sorted(
        p.name.removeprefix(JOB_PREFIX)
        for p in store.iterdir()
        if p.is_dir() and p.name.startswith(JOB_PREFIX)
    )


def partitions(store: Path, job: str) -> list[Path]:
    """The job's rank partitions, by rank (a rank-less one last): its ranks' own folders, and
    the places in its pack of the ranks that have none."""
    entries = list(job_dir(store, job).iterdir())
    found = [
        p for p in entries if p.name.startswith("rank=") and p.is_dir() and (p / SUMMARY).is_file()
    ]
    record = None
    if any(is_pack_name(p.name) for p in entries):
        with contextlib.suppress(TraceviewError):  # a broken record is said where it is read
            record = read_job_record(store, job)
    if record is not None and record.packed:
        own = {p.name for p in found}
        pack = job_dir(store, job) / record.pack
        text = str(pack)
        places = (PackPlace(pack, text, f"rank={k}") for k in record.packed)
        found += [place for place in places if place.name not in own]  # type: ignore[misc]

    return sorted(found, key=lambda p: rank_order(p.name.removeprefix("rank=")))


class PackPlace:
    """A rank's place in its job's pack, `<pack>/rank=<r>`: not a folder, so not made as a
    path. universal_pathlib makes a path in object storage at ~300 µs, and its text, name and
    hash at 20–50 µs each, every time (a 10,240-rank packed job in a bucket: ~8 s); a place
    knows them from the start, and its pack is one object for all its ranks. What else is
    asked of it is asked of the path it names, made then."""

    __slots__ = ("_path", "_text", "name", "pack_text", "parent")

    def __init__(self, pack: Path, pack_text: str, name: str) -> None:
        self.parent = pack
        self.name = name
        self.pack_text = pack_text.rstrip("/")
        self._text = f"{self.pack_text}/{name}"
        self._path: Path | None = None

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"PackPlace({self._text!r})"

    def __fspath__(self) -> str:
        return self._text

    def __hash__(self) -> int:
        return hash(self._text)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackPlace):
            return self._text == other._text
        return isinstance(other, Path) and str(other) == self._text

    def __truediv__(self, name: str) -> Path:
        return self._as_path() / name

    def __reduce__(self) -> tuple[object, ...]:  # to a process that reads it
        return (PackPlace, (self.parent, self.pack_text, self.name))

    def __getattr__(self, attr: str) -> object:
        if attr.startswith("_"):  # a slot not set (unpickling): never the path's
            raise AttributeError(attr)
        return getattr(self._as_path(), attr)

    def _as_path(self) -> Path:
        if self._path is None:
            self._path = self.parent / self.name
        return self._path


def rank_order(key: str) -> tuple[int, int]:
    """Rank keys in rank order, the rank-less one last."""
    return (1, 0) if key == NO_RANK or not key.lstrip("-").isdigit() else (0, int(key))


def is_pack_name(name: str) -> bool:
    """`name` is a pack's folder (PACK, or PACK_IN_BUCKET + an id)."""
    return name == PACK or name.startswith(PACK_IN_BUCKET)


# Parents of paths in object storage, by their text: the ranks of a pack share one.
_PARENTS: dict[str, Path] = {}
_PARENTS_KEPT = 4096


def parent_of(path: Path) -> Path:
    """`path.parent`, made once for the paths that share it: universal_pathlib makes a path in
    object storage anew at each step (~75 µs; 3 ms a rank of a stored job, 30 s at 10,240), and
    a store's per-rank code asks for the same few parents again and again."""
    if type(path) in (PosixPath, WindowsPath, PackPlace):
        return path.parent
    text = str(path).rstrip("/")
    key = text[: text.rfind("/")]
    if key.endswith(":/") or key.endswith(":"):  # a bucket's root, or above: no shared parent
        return path.parent
    found = _PARENTS.get(key)
    if found is None:
        if len(_PARENTS) >= _PARENTS_KEPT:
            _PARENTS.clear()
        found = _PARENTS[key] = path.parent
    return found


def is_packed(partition: Path) -> bool:
    """The partition is a rank's place in its job's pack."""
    return isinstance(partition, PackPlace)


def pack_of(partition: Path) -> str | None:
    """The text of the pack a rank's place is in (its ranks' one key, cheap to compare and
    hash); None for a partition of its own."""
    return partition.pack_text if isinstance(partition, PackPlace) else None


def job_of(partition: Path) -> Path:
    """The job folder a partition (or a place in its pack) belongs to."""
    parent = parent_of(partition)
    return parent_of(parent) if is_packed(partition) else parent


def store_of(partition: Path) -> Path:
    return job_of(partition).parent


def write_atomically(path: Path, data: bytes) -> None:
    """Written beside, then renamed over: a reader sees the old file or the new one."""
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.partial")  # writers may race
    try:
        partial.write_bytes(data)
        partial.replace(path)
    except OSError as e:
        partial.unlink(missing_ok=True)
        raise cannot_write(path, e) from None


def cannot_write(path: Path, error: OSError) -> CannotWrite:
    return CannotWrite(path, error.strerror or str(error))
