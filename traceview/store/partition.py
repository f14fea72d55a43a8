"""One rank's partition: its RankReport written as a summary (JSON) and four Parquet tables,
and read back into the same RankReport — the numbers every command shows come from here,
unchanged (tests/store compares them with the traces')."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import polars as pl

from traceview.analysis.breakdown import Breakdown
from traceview.analysis.rank import RankReport, keeps
from traceview.analysis.windows import StepBreakdown
from traceview.errors import TraceviewError, unreadable
from traceview.plain import noun
from traceview.remote import as_path, is_remote
from traceview.store.layout import (
    NO_RANK,
    PACK_SUMMARIES,
    PARTITION_VERSION,
    SUMMARY,
    TABLES,
    cannot_write,
    is_packed,
    pack_of,
    parent_of,
)
from traceview.tables import (
    BREAKDOWN_COLUMNS,
    CALLS_SCHEMA,
    INTERVALS_SCHEMA,
    STEPS_SCHEMA,
    WORK_SCHEMA,
)
from traceview.version import __version__

_OS_ERROR = re.compile(r"\(os error (\d+)\)")
# Bytes of each end of a trace that its digest covers. The size and the modification time in
# nanoseconds tell a changed trace first; hashing more of each end would cost every trace of a
# many-rank ingest ms more (2 MiB: 3 ms of BLAKE2b, more than scanning a 2 MB trace takes).
_HEAD_TAIL = 256 << 10


# RankReport's path fields, kept as text: a path in object storage is no pathlib.Path.
_PATH_FIELDS = tuple(f.name for f in msgspec.structs.fields(RankReport) if f.type is Path)


def _summary_type() -> type:
    """RankReport's fields but its tables, as a msgspec Struct: declared once, in RankReport."""
    fields: list[tuple[str, object] | tuple[str, object, object]] = []
    for f in msgspec.structs.fields(RankReport):
        if f.name in TABLES:
            continue
        if f.name in _PATH_FIELDS:
            fields.append((f.name, str))
            continue
        if f.default_factory is not msgspec.NODEFAULT:
            fields.append((f.name, f.type, msgspec.field(default_factory=f.default_factory)))
        elif f.default is not msgspec.NODEFAULT:
            fields.append((f.name, f.type, f.default))
        else:
            fields.append((f.name, f.type))
    return msgspec.defstruct("RankSummary", fields, frozen=True, kw_only=True)  # type: ignore[arg-type]


RankSummary: Any = _summary_type()


class Source(msgspec.Struct, frozen=True):
    """Which trace a partition was made from: unchanged when all of these are."""

    path: str  # absolute, when ingested
    size: int
    mtime_ns: int
    digest: str  # BLAKE2b of the first and last 256 KiB

    def same_content(self, other: Source) -> bool:
        return (self.size, self.mtime_ns, self.digest) == (other.size, other.mtime_ns, other.digest)


def source_of(path: Path) -> Source:
    try:
        stat = path.stat()
        h = hashlib.blake2b(digest_size=16)
        with path.open("rb") as f:
            h.update(f.read(_HEAD_TAIL))
            if stat.st_size > 2 * _HEAD_TAIL:
                f.seek(-_HEAD_TAIL, os.SEEK_END)
            h.update(f.read(_HEAD_TAIL))
    except OSError as e:
        raise unreadable(path, e) from None
    return Source(str(path.resolve()), stat.st_size, stat.st_mtime_ns, h.hexdigest())


class TableFile(msgspec.Struct, frozen=True):
    """One of the partition's Parquet files as written: a damaged or replaced one differs."""

    size: int
    digest: str  # BLAKE2b of the whole file


# What a damaged Parquet file makes polars raise: its errors, or a panic inside its decoder
# (a BaseException, which would escape every `except Exception`).
UNREADABLE_TABLE = (pl.exceptions.PolarsError, pl.exceptions.PanicException)


def table_file(path: Path) -> TableFile:
    h = hashlib.blake2b(digest_size=16)  # as digest, a block at a time
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return TableFile(path.stat().st_size, h.hexdigest())


class Stored(msgspec.Struct, frozen=True):
    """summary.json: the rank's report and how it was made."""

    store_version: int
    traceview_version: str
    source: Source
    comm_pattern: str | None
    report: RankSummary  # type: ignore[valid-type]
    files: dict[str, TableFile] = {}  # by table (none in partitions written before it was kept)


def _enc(value: object) -> object:
    if isinstance(value, Path) or is_remote(value):
        return str(value)
    raise NotImplementedError(type(value))


def _dec(kind: type, value: object) -> object:
    if kind is object:
        return value
    raise NotImplementedError(kind)


def write_partition(
    report: RankReport, folder: Path, source: Source, comm_pattern: str | None
) -> None:
    """Into `folder` (made here, not yet in place): the report needs its intervals."""
    if report.intervals is None or report.work is None:
        raise ValueError(
            "a partition needs the report's intervals (keep_intervals=True) and its work, as "
            "the analysis of a trace gives them"
        )
    summary = RankSummary(
        **{  # type: ignore[operator]
            f: getattr(report, f) for f in RankSummary.__struct_fields__
        }
    )
    steps = pl.DataFrame(
        [
            {"step": s.step, "partial": s.partial, **msgspec.structs.asdict(s.breakdown)}
            for s in report.steps
        ],
        schema={k: v for k, v in STEPS_SCHEMA.items() if k != "window_ns"},
    ).with_columns(window_ns=pl.col("end_ns") - pl.col("start_ns"))
    tables = {
        "steps": steps,
        "calls": report.calls.drop("rank"),
        "work": report.work.drop("rank"),
        "intervals": report.intervals.drop("rank"),
    }
    try:
        folder.mkdir(parents=True)
        for name, table in tables.items():
            table.write_parquet(folder / f"{name}.parquet")
        files = {name: table_file(folder / f"{name}.parquet") for name in tables}
        stored = Stored(PARTITION_VERSION, __version__, source, comm_pattern, summary, files)
        (folder / SUMMARY).write_bytes(msgspec.json.encode(stored, enc_hook=_enc))
    except OSError as e:
        shutil.rmtree(folder, ignore_errors=True)
        raise cannot_write(folder, e) from None
    except pl.exceptions.PolarsError as e:  # polars says the system's error in its own words
        shutil.rmtree(folder, ignore_errors=True)
        code = _OS_ERROR.search(str(e))
        if code is None:
            raise
        raise cannot_write(folder, OSError(int(code[1]), os.strerror(int(code[1])))) from None


def summary_digest(folder: Path) -> str:
    """The hash of the partition's summary.json, as its job record keeps it."""
    path = folder / SUMMARY
    try:
        return digest(path.read_bytes())
    except OSError as e:
        raise unreadable(path, e) from None


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def read_stored(folder: Path, accepted: tuple[str, ...] | None = None) -> Stored:
    """The partition's summary; checked against the hashes its job record accepts, where it
    keeps them (a damaged summary is named, never read as other numbers). A packed rank's
    comes from its pack's summaries (read once while they are unchanged)."""
    if is_packed(folder):
        return _packed_summary(folder, accepted)
    path = folder / SUMMARY
    data = _summary_bytes(path, accepted)
    try:
        stored = msgspec.json.decode(data, type=Stored, dec_hook=_dec)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise TraceviewError(f"{path}: not a partition summary ({e})") from None
    return _readable(stored, path)


def _summary_bytes(path: Path, accepted: tuple[str, ...] | None) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise unreadable(path, e) from None
    if accepted and (found := digest(data)) not in accepted:
        raise TraceviewError(
            f"{path}: damaged: not the summary stored at ingest (hash {found[:12]}…; its job "
            f"record keeps {', '.join(d[:12] + '…' for d in accepted)}): ingest its trace again"
        )
    return data


# A pack's summaries and the tables checked, as last read in this process (by path, size and
# modification time): its ranks are read one by one, and its files are the size of the job.
_PACKS: dict[tuple[str, int, int], tuple[str, dict[str, Stored]]] = {}
_CHECKED: dict[tuple[str, int, int], TableFile] = {}
_KEPT = 8  # packs (and table files) remembered at once


def _stat_key(path: Path) -> tuple[str, int, int]:
    try:
        stat = path.stat()
    except OSError as e:
        raise unreadable(path, e) from None
    return str(path), stat.st_size, stat.st_mtime_ns


def _remembered(memo: dict[Any, Any], key: Any, value: Any) -> Any:
    if len(memo) >= _KEPT:
        memo.clear()
    memo[key] = value
    return value


def read_summaries(
    folders: Sequence[Path], accepted: Sequence[tuple[str, ...] | None]
) -> list[Stored | None]:
    """read_stored of each partition, None where it fails (read alone, it says why); the
    ranks of one pack with one look at its summaries."""
    packs = {pack_of(f) for f in folders}
    if len(packs) == 1 and folders and is_packed(folders[0]) and len(set(accepted)) == 1:
        try:
            ranks = _pack_summaries(parent_of(folders[0]), accepted[0])
        except TraceviewError:
            return [None] * len(folders)
        found = [ranks.get(f.name.removeprefix("rank=")) for f in folders]
        return [
            s if s is not None and s.store_version <= PARTITION_VERSION else None for s in found
        ]
    out: list[Stored | None] = []
    for folder, sums in zip(folders, accepted, strict=True):
        try:
            out.append(read_stored(folder, sums))
        except TraceviewError:
            out.append(None)
    return out


def _pack_summaries(pack: Path, accepted: tuple[str, ...] | None) -> dict[str, Stored]:
    """A pack's summaries by rank key, checked against the hashes its job record accepts."""
    path = pack / PACK_SUMMARIES
    key = _stat_key(path)
    if key not in _PACKS:
        data = _summary_bytes(path, None)
        try:
            ranks = msgspec.json.decode(data, type=dict[str, Stored], dec_hook=_dec)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            raise TraceviewError(f"{path}: not a pack's summaries ({e})") from None
        _remembered(_PACKS, key, (digest(data), ranks))
    held, ranks = _PACKS[key]
    if accepted and held not in accepted:
        _summary_bytes(path, accepted)  # says it, with the hashes
    return ranks


def _packed_summary(place: Path, accepted: tuple[str, ...] | None) -> Stored:
    stored = _pack_summaries(parent_of(place), accepted).get(place.name.removeprefix("rank="))
    path = parent_of(place) / PACK_SUMMARIES
    if stored is None:
        raise TraceviewError(f"{place}: not in its job's pack ({path}): ingest the job again")
    return _readable(stored, path)


def _readable(stored: Stored, path: Path) -> Stored:
    if stored.store_version > PARTITION_VERSION:
        raise TraceviewError(
            f"{path}: store_version {stored.store_version} is newer than this traceview reads "
            f"({PARTITION_VERSION}): upgrade traceview"
        )
    return stored


def encoded_summaries(ranks: dict[str, Stored]) -> bytes:
    """A pack's summaries, by rank key, as its summaries.json holds them."""
    return msgspec.json.encode(ranks, enc_hook=_enc)


def same_summary(a: Any, b: Any) -> bool:
    """Whether two reports (or a summary and a report) hold the same summary: the same rank
    of the same ingest, or of an ingest that measured the same."""

    def said(r: Any) -> bytes:
        fields = {f: getattr(r, f) for f in RankSummary.__struct_fields__}
        return msgspec.json.encode(RankSummary(**fields), enc_hook=_enc)

    return said(a) == said(b)


def check_current(stored: Stored, folder: Path) -> None:
    """A partition an older traceview wrote holds an older analysis: made again, not read."""
    if stored.store_version < PARTITION_VERSION:
        raise TraceviewError(
            f"{folder}: written by an older traceview (store_version {stored.store_version}, "
            f"this one reads {PARTITION_VERSION}): run traceview ingest again to update it"
        )


def check_table(folder: Path, name: str, stored: Stored | None) -> None:
    """The table as it was written at ingest (its recorded size and hash), so that a damaged
    file is named, never read as different numbers; a partition that recorded none is read
    as it is."""
    expected = stored.files.get(name) if stored is not None else None
    if expected is None:
        return
    path = table_path(folder, name)
    try:
        if is_packed(folder):  # hashed once for all its ranks
            key = _stat_key(path)
            found = _CHECKED.get(key) or _remembered(_CHECKED, key, table_file(path))
        else:
            found = table_file(path)
    except OSError as e:
        raise unreadable(path, e) from None
    if found != expected:
        raise TraceviewError(
            f"{path}: damaged: not the bytes stored at ingest ({found.size:,} bytes, hash "
            f"{found.digest[:12]}…; stored {expected.size:,}, {expected.digest[:12]}…): "
            "ingest its trace again"
        )


def check_whole(stored: Stored, folder: Path) -> None:
    """Every table of the partition is there, as it was written (or, for a partition that did
    not record its files, at least readable): a damaged one is made again, not kept."""
    for name in TABLES:
        path = table_path(folder, name)
        try:
            if name in stored.files:
                check_table(folder, name, stored)
            else:
                pl.read_parquet_schema(path)
        except OSError as e:
            raise unreadable(path, e) from None
        except UNREADABLE_TABLE as e:
            raise TraceviewError(f"{path}: not a readable Parquet table ({_first(e)})") from None


def _table(
    folder: Path,
    name: str,
    schema: dict[str, pl.DataType],
    rank: int | None,
    stored: Stored | None = None,
) -> pl.DataFrame:
    check_table(folder, name, stored)
    path = table_path(folder, name)
    try:
        if is_packed(folder):  # its rows of the pack's (the pack's row groups by rank)
            table = pl.scan_parquet(str(path)).filter(of_ranks([rank])).drop("rank").collect()
        else:
            table = pl.read_parquet(str(path))
    except OSError as e:
        raise unreadable(path, e) from None
    except UNREADABLE_TABLE as e:
        raise TraceviewError(
            f"{path}: not a readable Parquet table, damaged ({_first(e)}): ingest its trace again"
        ) from None
    if "rank" in schema:
        table = table.with_columns(rank=pl.lit(rank, pl.Int32))
    missing = [c for c in schema if c not in table.columns]
    if missing:
        raise TraceviewError(f"{path}: lacks {noun(len(missing), 'column')} {', '.join(missing)}")
    return table.select(list(schema)).cast(schema)  # type: ignore[arg-type]


def table_path(folder: Path, name: str) -> Path:
    """Where a partition's table is: its own file, or its pack's (every packed rank's rows)."""
    return (parent_of(folder) if is_packed(folder) else folder) / f"{name}.parquet"


def of_ranks(ranks: Iterable[int | None]) -> pl.Expr:
    """A pack's rows of these ranks (None: the rank-less trace's)."""
    wanted = set(ranks)
    keep = pl.col("rank").is_in([r for r in wanted if r is not None])
    return keep | pl.col("rank").is_null() if None in wanted else keep


def _first(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def read_work_table(folder: Path, rank: int | None, stored: Stored | None = None) -> pl.DataFrame:
    """The partition's time per step and name of work (WORK_SCHEMA)."""
    return _table(folder, "work", WORK_SCHEMA, rank, stored)


def check_pattern(stored: Stored, folder: Path, comm_pattern: str | None) -> None:
    """A partition holds the analysis made with its ingest's --comm-pattern, and no other."""
    if stored.comm_pattern != comm_pattern:
        raise TraceviewError(
            f"{folder}: ingested with --comm-pattern {stored.comm_pattern!r}, asked for "
            f"{comm_pattern!r}: ingest again with the pattern wanted"
        )


_FILE = "_file"


def read_tables(
    folders: Sequence[Path], ranks: Sequence[int | None], name: str, schema: dict[str, Any]
) -> list[pl.DataFrame] | None:
    """The table `name` of many partitions (the ranks `ranks`) in one read — polars reads the
    files side by side, where a read each costs ~2 ms at 1,024 ranks — each partition's rows
    apart, in `folders`' order; None when they cannot be read so (then each is read alone, to
    say which one is at fault)."""
    read = _read_together(folders, ranks, name, schema)
    if read is None:
        return None
    together, key, keys = read
    if key == _FILE:
        apart = together.partition_by(_FILE, as_dict=True, include_key=False)
        empty = together.clear().drop(_FILE)
        return [apart.get((k,), empty) for k in keys]
    # Split in the schema's column order (`rank` last where it has none), as a list with its
    # keys taken once: as a dict keeping the key, polars reads each part's key again (a second
    # at 10,000 ranks).
    parts = together.partition_by("rank", maintain_order=True, include_key="rank" in schema)
    found = together.get_column("rank").unique(maintain_order=True).to_list()
    by_rank = {(k,): part for k, part in zip(found, parts, strict=True)}
    empty = together.clear().select(list(schema))
    return [by_rank.get((k,), empty) for k in keys]


def read_steps(
    folders: Sequence[Path], ranks: Sequence[int | None]
) -> list[tuple[StepBreakdown, ...]] | None:
    """The steps of many partitions as their reports hold them, read as read_tables reads
    them; each partition's made in one pass over the rows, with no table of its own (at
    10,240 ranks, those tables cost a tenth of a second)."""
    read = _read_together(folders, ranks, "steps", STEPS_SCHEMA)
    if read is None:
        return None
    together, key, keys = read
    rows = together.rows()
    at = together.columns.index(key)
    by_key: dict[object, list[StepBreakdown]] = {}
    for row, step in zip(rows, _step_breakdowns(rows, together.columns), strict=True):
        by_key.setdefault(row[at], []).append(step)
    return [tuple(by_key.get(k, ())) for k in keys]


def _read_together(
    folders: Sequence[Path], ranks: Sequence[int | None], name: str, schema: dict[str, Any]
) -> tuple[pl.DataFrame, str, list[Any]] | None:
    """The table `name` of the partitions as one table with the column that tells them apart
    (each one's file, or a pack's rank) and its value for each partition, in order; None when
    they cannot be read so."""
    if any(is_packed(f) for f in folders):
        return _packed_together(folders, ranks, name, schema)
    paths = [str(folder / f"{name}.parquet") for folder in folders]
    try:
        together = pl.scan_parquet(paths, include_file_paths=_FILE, glob=False).collect()
        missing = [c for c in schema if c != "rank" and c not in together.columns]
        if missing:
            return None
        if "rank" in schema:
            rank = pl.col(_FILE).replace_strict(paths, list(ranks), return_dtype=pl.Int32)
            together = together.with_columns(rank=rank)
        together = together.select(*schema, _FILE).cast(schema)  # type: ignore[arg-type]
    except (OSError, *UNREADABLE_TABLE):
        return None  # each read alone then, to name the one at fault
    return together, _FILE, paths


def _packed_together(
    places: Sequence[Path], ranks: Sequence[int | None], name: str, schema: dict[str, Any]
) -> tuple[pl.DataFrame, str, list[Any]] | None:
    """_read_together for ranks of one pack: its file read once, `rank` telling them apart."""
    if len({pack_of(p) for p in places}) > 1 or not all(is_packed(p) for p in places):
        return None
    path = table_path(places[0], name)
    try:
        together = pl.scan_parquet(str(path)).filter(of_ranks(ranks)).collect()
        if any(c not in together.columns for c in schema):
            return None
        columns = list(schema) if "rank" in schema else [*schema, "rank"]
        together = together.select(columns).cast(schema)  # type: ignore[arg-type]
    except (OSError, *UNREADABLE_TABLE):
        return None
    return together, "rank", list(ranks)


def _step_breakdowns(rows: list[tuple[Any, ...]], names: list[str]) -> list[StepBreakdown]:
    """A steps table's rows (its `names`) as the report holds them (read as tuples: at 10,000
    ranks, named rows or a select each cost seconds)."""
    at = [names.index(c) for c in ("step", "partial", *BREAKDOWN_COLUMNS)]
    return [
        StepBreakdown(
            step=row[at[0]],
            partial=row[at[1]],
            breakdown=Breakdown(
                **{k: row[i] for k, i in zip(BREAKDOWN_COLUMNS, at[2:], strict=True)}
            ),
        )
        for row in rows
    ]


def read_partition(
    folder: Path,
    *,
    keep_intervals: bool | int = False,
    comm_pattern: str | None = None,
    stored: Stored | None = None,
    tables: dict[str, pl.DataFrame] | None = None,
    with_work: bool = True,
    accepted: tuple[str, ...] | None = None,
    steps: tuple[StepBreakdown, ...] | None = None,
) -> RankReport:
    """The rank's report as it was measured when its trace was ingested (`stored`, `tables`,
    `steps`: its summary, tables and steps where they were read already, with other
    partitions'; `with_work`: its time per step and name, else left to be read when asked for;
    `accepted`: the hashes its job record accepts for its summary)."""
    stored = stored or read_stored(folder, accepted)
    check_current(stored, folder)
    check_pattern(stored, folder, comm_pattern)
    summary: Any = stored.report
    key = folder.name.removeprefix("rank=")
    if key != (NO_RANK if summary.rank is None else str(summary.rank)):
        raise TraceviewError(f"{folder}: holds rank {summary.rank}, not {key}")
    tables = tables or {}
    if steps is None:
        table = _table(folder, "steps", STEPS_SCHEMA, summary.rank, stored)
        steps = tuple(_step_breakdowns(table.rows(), table.columns))
    fields: dict[str, Any] = msgspec.structs.asdict(summary)
    fields.update({f: as_path(fields[f]) for f in _PATH_FIELDS})
    return RankReport(
        **fields,
        steps=steps,
        calls=tables["calls"]
        if "calls" in tables
        else _table(folder, "calls", CALLS_SCHEMA, summary.rank, stored),
        work=tables["work"]
        if "work" in tables
        else (read_work_table(folder, summary.rank, stored) if with_work else None),
        intervals=_table(folder, "intervals", INTERVALS_SCHEMA, summary.rank, stored)
        if keeps(keep_intervals, summary.rank)
        else None,
    )
