"""Packing a job (docs/store.md, "Packed jobs"): its ranks' tables into one Parquet file each,
with a `rank` column, and their summaries into one JSON file, so that reading a job of 10,000
ranks opens a handful of files, not 50,000. Under the writer lock; written aside, then moved
into place as a partition is, the job record accepting the old pack and the new one while the
move is under way (store/commit.py, `place`)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import msgspec
import polars as pl

from traceview.errors import TraceviewError
from traceview.store import commit, layout
from traceview.store.completeness import accepted_summaries
from traceview.store.partition import (
    Stored,
    check_current,
    check_whole,
    digest,
    encoded_summaries,
    of_ranks,
    read_stored,
    table_file,
    table_path,
)

# An ingest packs a job of this many ranks or more: below it, a command spends less time
# opening the job's files than rewriting them would cost each ingest.
PACK_FROM_RANKS = 256
_FILE = "_file"
_ROW_GROUP = 1 << 16  # rows: a rank's intervals are read from the row groups that hold them


def pack_job(root: Path, job: str, incoming: Path, from_ranks: int = 0) -> int:
    """(Under the writer lock.) The job's ranks that have partitions of their own into its
    pack, with those it holds, where it has `from_ranks` ranks or more; how many ranks the
    pack holds now (0: nothing was packed). A damaged or outdated partition is left as it is
    (reading it says so); a damaged pack is not packed again (its ranks would be lost):
    reading it says so."""
    record = commit.job_record(root, job)
    places = layout.partitions(root, job)
    if record is None or len(places) < from_ranks or all(layout.is_packed(p) for p in places):
        return 0
    summaries: dict[str, Stored] = {}
    packing: list[Path] = []
    for place, accepted in zip(places, accepted_summaries(places), strict=True):
        try:
            stored = read_stored(place, accepted)
            check_current(stored, place)
            check_whole(stored, place)
        except TraceviewError:
            if layout.is_packed(place):
                return 0
            continue
        summaries[layout.rank_key(stored.report.rank)] = stored
        packing.append(place)
    if all(layout.is_packed(p) for p in packing):
        return 0
    made = incoming / f"{layout.PACK}-{job}"
    made.mkdir()
    ranks_of = [s.report.rank for s in summaries.values()]  # in `packing`'s order
    files = {}
    for name in layout.TABLES:
        path = made / f"{name}.parquet"
        _rows(packing, ranks_of, name).write_parquet(path, row_group_size=_ROW_GROUP)
        files[name] = table_file(path)
    ranks = {k: msgspec.structs.replace(s, files=files) for k, s in summaries.items()}
    data = encoded_summaries(ranks)
    (made / layout.PACK_SUMMARIES).write_bytes(data)
    _put_in_place(root, job, record, made, ranks, data, packing)
    return len(ranks)


def _rows(places: Sequence[Path], ranks: Sequence[int | None], name: str) -> pl.DataFrame:
    """The table `name` of every place, with its rank, in rank order: the old pack's rows of
    the ranks it keeps, and each partition's own."""
    own = [p for p in places if not layout.is_packed(p)]
    own_ranks = [r for p, r in zip(places, ranks, strict=True) if not layout.is_packed(p)]
    parts: list[pl.DataFrame] = []
    packed = {r for p, r in zip(places, ranks, strict=True) if layout.is_packed(p)}
    if packed:
        pack = next(p for p in places if layout.is_packed(p))
        parts.append(pl.scan_parquet(table_path(pack, name)).filter(of_ranks(packed)).collect())
    if own:
        paths = [str(table_path(p, name)) for p in own]
        try:
            together = pl.scan_parquet(paths, include_file_paths=_FILE, glob=False).collect()
        except pl.exceptions.SchemaError:  # partitions of differing columns: one by one
            together = pl.concat(
                [pl.read_parquet(p).with_columns(pl.lit(p).alias(_FILE)) for p in paths],
                how="diagonal_relaxed",
            )
        rank = pl.col(_FILE).replace_strict(paths, own_ranks, return_dtype=pl.Int32)
        parts.append(together.with_columns(rank=rank).drop(_FILE))
    table = pl.concat(parts, how="diagonal_relaxed")
    return table.sort("rank", maintain_order=True, nulls_last=True)


def _put_in_place(
    root: Path,
    job: str,
    record: layout.JobRecord,
    made: Path,
    ranks: dict[str, Stored],
    data: bytes,
    packing: Sequence[Path],
) -> None:
    pack_digest = digest(data)
    keys = tuple(sorted(ranks, key=layout.rank_order))
    before = record.summaries.get(layout.PACK, ())
    during = msgspec.structs.replace(
        record,
        summaries={**record.summaries, layout.PACK: tuple(sorted({*before, pack_digest}))},
        packed=tuple(sorted({*record.packed, *keys}, key=layout.rank_order)),
    )
    layout.write_job_record(root, job, during)
    commit.replace_dir(made, layout.job_dir(root, job) / layout.PACK)
    for place in packing:
        if not layout.is_packed(place):
            shutil.rmtree(place, ignore_errors=True)  # its rank is read from the pack now
    kept = {k: v for k, v in record.summaries.items() if k not in ranks and k != layout.PACK}
    after = msgspec.structs.replace(
        record, summaries={**kept, layout.PACK: (pack_digest,)}, packed=keys
    )
    layout.write_job_record(root, job, after)
