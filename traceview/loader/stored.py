"""Runs read from a trace store: each rank's report from its partition, no trace parsed (the
rank's intervals only when asked for). What a stored job lacks: store/completeness.py."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import suppress
from pathlib import Path

import polars as pl

from traceview.analysis.rank import RankReport
from traceview.analysis.windows import StepBreakdown
from traceview.errors import TraceviewError
from traceview.loader.parallel import DoneFn, Options, Outcome, guarded
from traceview.store import layout, lock
from traceview.store.completeness import accepted_summaries
from traceview.store.partition import (
    Stored,
    check_pattern,
    check_table,
    read_partition,
    read_steps,
    read_stored,
    read_summaries,
    read_tables,
    read_work_table,
    same_summary,
)
from traceview.tables import CALLS_SCHEMA, WORK_SCHEMA

BATCH = 256  # partitions whose tables are read in one go (progress is told after each)
_READ_TOGETHER = ("steps", "calls")  # the tables a load reads of every partition, together
Steps = tuple[StepBreakdown, ...]


def read_partitions(
    partitions: Sequence[Path], options: Options, on_done: DoneFn | None = None
) -> list[Outcome]:
    """(Under the stores' lock, store/lock.reading: else a commit may come between a rank's
    summary and its tables.) Each partition's rank report, or why it cannot be read."""
    accepted = accepted_summaries(partitions)
    if partitions:  # the usual mismatch (a whole store, another pattern): said once
        head = None
        with suppress(TraceviewError):  # (a damaged summary is said where it is read)
            head = read_stored(partitions[0], accepted[0])
        if head is not None:
            check_pattern(head, partitions[0], options.comm_pattern)
    outcomes: list[Outcome] = []
    for first, last in batches(partitions):
        batch = partitions[first:last]
        batch_accepted = accepted[first:last]
        summaries, tables, steps = _read_batch(batch, batch_accepted)
        for folder, stored, own, sums, read in zip(
            batch, summaries, tables, batch_accepted, steps, strict=True
        ):
            outcomes.append(
                guarded(
                    folder,
                    lambda f=folder, s=stored, t=own, a=sums, r=read: read_partition(  # type: ignore[misc]
                        f,
                        keep_intervals=options.keep_intervals,
                        comm_pattern=options.comm_pattern,
                        stored=s,
                        tables=t,
                        with_work=False,  # what only a diff reads: when it asks (read_work)
                        accepted=a,
                        steps=r,
                    ),
                )
            )
            if on_done:
                on_done(len(outcomes), len(partitions), outcomes[-1])
    return outcomes


def read_again(
    partitions: Sequence[Path], held: Sequence[RankReport], options: Options
) -> list[Outcome]:
    """The reports of the partitions the ranks `held` were read from, read again for what
    their load left out (the intervals): one that was ingested again since is an error."""
    with lock.reading(layout.store_of(f) for f in partitions):
        outcomes = read_partitions(partitions, options)
    for folder, outcome, rank in zip(partitions, outcomes, held, strict=True):
        if isinstance(outcome, RankReport) and not same_summary(outcome, rank):
            raise TraceviewError(_changed(folder))
    return outcomes


def read_work(partitions: Sequence[Path], held: Sequence[RankReport]) -> list[pl.DataFrame]:
    """The time per step and name of work of these partitions (whose ranks were read as
    `held`): read together a batch at a time, else each alone, saying which one is at fault."""
    out: list[pl.DataFrame] = []
    with lock.reading(layout.store_of(f) for f in partitions):
        accepted = accepted_summaries(partitions)
        for first, last in batches(partitions):
            folders = partitions[first:last]
            ranks = [r.rank for r in held[first:last]]
            # the hashes the tables are checked by
            summaries = [read_stored(f, a) for f, a in zip(folders, accepted[first:], strict=False)]
            for folder, stored, rank in zip(folders, summaries, held[first:], strict=False):
                if not same_summary(stored.report, rank):
                    raise TraceviewError(_changed(folder))
            together = None
            if _as_stored(folders, summaries, ["work"]):
                together = read_tables(folders, ranks, "work", WORK_SCHEMA)
            if together is None:
                together = [read_work_table(f, r, s) for f, r, s in
                            zip(folders, ranks, summaries, strict=True)]  # fmt: skip
            out += together
    return out


def batches(partitions: Sequence[Path]) -> Iterator[tuple[int, int]]:
    """(first, end) of each batch of `partitions` whose tables are read together: up to BATCH
    ranks' own partitions, or every rank of one pack (its files are read once)."""
    packs = [layout.pack_of(p) for p in partitions]
    first = 0
    while first < len(partitions):
        pack, last = packs[first], first + 1
        while (
            last < len(partitions)
            and packs[last] == pack
            and (pack is not None or last - first < BATCH)
        ):
            last += 1
        yield first, last
        first = last


def _changed(folder: Path) -> str:
    return (
        f"{folder}: ingested again since its job was read: read the job again (run the command "
        "again, or reload the page)"
    )


def _as_stored(
    folders: Sequence[Path], summaries: Sequence[Stored | None], names: Iterable[str]
) -> bool:
    """Every table `names` of the partitions holds the bytes stored at ingest (else each is
    read alone, and the damaged one names itself)."""
    checked: set[tuple[object, str, object]] = set()  # a pack's files: once for its ranks
    try:
        for folder, stored in zip(folders, summaries, strict=True):
            place = layout.pack_of(folder) or folder
            for name in names:
                key = (place, name, stored.files.get(name) if stored else None)
                if key not in checked:
                    check_table(folder, name, stored)
                    checked.add(key)
    except TraceviewError:
        return False
    return True


def _read_batch(
    folders: Sequence[Path], accepted: Sequence[tuple[str, ...] | None]
) -> tuple[list[Stored | None], list[dict[str, pl.DataFrame]], list[Steps | None]]:
    """The batch's summaries, and (where every summary was read) its calls tables and steps
    read together; what is not read here each partition reads alone, saying its own error."""
    summaries = read_summaries(folders, accepted)
    tables: list[dict[str, pl.DataFrame]] = [{} for _ in folders]
    steps: list[Steps | None] = [None] * len(folders)
    if all(summaries) and _as_stored(folders, summaries, _READ_TOGETHER):
        ranks = [s.report.rank for s in summaries if s is not None]
        calls = read_tables(folders, ranks, "calls", CALLS_SCHEMA) or []
        for own, table in zip(tables, calls, strict=False):
            own["calls"] = table
        steps = list(read_steps(folders, ranks) or steps)
    return summaries, tables, steps
