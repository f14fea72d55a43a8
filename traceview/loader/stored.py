"""Runs read from a trace store: each rank's report from its partition, no trace parsed (the
rank's intervals only when asked for). What a stored job lacks: store/completeness.py."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import polars as pl

from traceview.errors import TraceviewError
from traceview.loader.parallel import DoneFn, Options, Outcome, guarded
from traceview.store.partition import (
    Stored,
    check_pattern,
    check_table,
    read_partition,
    read_stored,
    read_tables,
    read_work_table,
)
from traceview.tables import CALLS_SCHEMA, STEPS_SCHEMA, WORK_SCHEMA

BATCH = 256  # partitions whose tables are read in one go (progress is told after each)
_READ_TOGETHER = {"steps": STEPS_SCHEMA, "calls": CALLS_SCHEMA}


def read_partitions(
    partitions: Sequence[Path], options: Options, on_done: DoneFn | None = None
) -> list[Outcome]:
    if partitions:  # the usual mismatch (a whole store, another pattern): said once
        check_pattern(read_stored(partitions[0]), partitions[0], options.comm_pattern)
    outcomes: list[Outcome] = []
    for first in range(0, len(partitions), BATCH):
        batch = partitions[first : first + BATCH]
        summaries, tables = _read_batch(batch)
        for folder, stored, own in zip(batch, summaries, tables, strict=True):
            outcomes.append(
                guarded(
                    folder,
                    lambda f=folder, s=stored, t=own: read_partition(  # type: ignore[misc]
                        f,
                        keep_intervals=options.keep_intervals,
                        comm_pattern=options.comm_pattern,
                        stored=s,
                        tables=t,
                        with_work=False,  # what only a diff reads: when it asks (read_work)
                    ),
                )
            )
            if on_done:
                on_done(len(outcomes), len(partitions), outcomes[-1])
    return outcomes


def read_work(partitions: Sequence[Path], ranks: Sequence[int | None]) -> list[pl.DataFrame]:
    """The time per step and name of work of these partitions (of these ranks): read together
    a batch at a time, else each alone, saying which one is at fault."""
    out: list[pl.DataFrame] = []
    for first in range(0, len(partitions), BATCH):
        folders, batch_ranks = partitions[first : first + BATCH], ranks[first : first + BATCH]
        summaries = [read_stored(f) for f in folders]  # the hashes the tables are checked by
        together = None
        if _as_stored(folders, summaries, ["work"]):
            together = read_tables(folders, batch_ranks, "work", WORK_SCHEMA)
        if together is None:
            together = [read_work_table(f, r, s) for f, r, s in
                        zip(folders, batch_ranks, summaries, strict=True)]  # fmt: skip
        out += together
    return out


def _as_stored(
    folders: Sequence[Path], summaries: Sequence[Stored | None], names: Iterable[str]
) -> bool:
    """Every table `names` of the partitions holds the bytes stored at ingest (else each is
    read alone, and the damaged one names itself)."""
    try:
        for folder, stored in zip(folders, summaries, strict=True):
            for name in names:
                check_table(folder, name, stored)
    except TraceviewError:
        return False
    return True


def _read_batch(
    folders: Sequence[Path],
) -> tuple[list[Stored | None], list[dict[str, pl.DataFrame]]]:
    """The batch's summaries, and (where every summary was read) its steps and calls tables
    read together; what is not read here each partition reads alone, saying its own error."""
    summaries: list[Stored | None] = []
    for folder in folders:
        try:
            summaries.append(read_stored(folder))
        except TraceviewError:
            summaries.append(None)
    tables: list[dict[str, pl.DataFrame]] = [{} for _ in folders]
    if all(summaries) and _as_stored(folders, summaries, _READ_TOGETHER):
        ranks = [s.report.rank for s in summaries if s is not None]
        for name, schema in _READ_TOGETHER.items():
            read = read_tables(folders, ranks, name, schema)
            for own, table in zip(tables, read or [], strict=False):
                own[name] = table
    return summaries, tables
