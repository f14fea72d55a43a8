"""A job ingested in parts by independent processes (`traceview ingest --shard K/N`, one per
task of a scheduler's array): shard K takes the K-th of N contiguous parts of each run's trace
files, in the order they are listed (names sorted, as every process lists them), and the job's
record says which shards are in until all are (docs/store.md "Sharded ingest")."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from traceview.errors import TraceviewError
from traceview.plain import number_runs
from traceview.store.layout import JobRecord, Shards


class Shard(msgspec.Struct, frozen=True):
    index: int  # 1 to `of`
    of: int


def parsed_shard(text: str) -> Shard:
    """`K/N`, 1 ≤ K ≤ N."""
    k, slash, n = text.partition("/")
    if not slash or not (k.strip().isdigit() and n.strip().isdigit()):
        raise ValueError(f"not K/N: {text!r} (shard 1 of 4 is 1/4)")
    shard = Shard(int(k), int(n))
    if not 1 <= shard.index <= shard.of:
        raise ValueError(f"{text}: K is 1 to N")
    return shard


def _index(position: int, listed: int, of: int) -> int:
    """The shard (1 to `of`) of the file at `position` among `listed`: contiguous runs."""
    return position * of // listed + 1


def files_of(files: Sequence[Path], shard: Shard) -> tuple[Path, ...]:
    return tuple(f for i, f in enumerate(files) if _index(i, len(files), shard.of) == shard.index)


def recorded(old: JobRecord | None, shard: Shard | None, listed: int, job: str) -> Shards | None:
    """The job's shards once `shard` is in (None: the job is ingested whole). A job ingested
    whole before counts every shard in; one in other shards, not all of them in, is refused."""
    if shard is None:
        return None
    before = old.shards if old is not None else None
    if before is not None and before.of != shard.of and missing(before):
        left = number_runs(missing(before))
        raise TraceviewError(
            f"job {job!r} is being ingested in {before.of} shards ({left} not yet in): ingest the "
            f"rest with --shard K/{before.of}, or the whole run without --shard"
        )
    if before is not None and before.of == shard.of:
        done = {*before.done, shard.index}
    elif old is not None and old.traces:  # stored whole, or in shards all in: each is in
        done = set(range(1, shard.of + 1))
    else:
        done = {shard.index}
    return Shards(of=shard.of, done=tuple(sorted(done)), listed=listed)


def missing(shards: Shards | None) -> list[int]:
    """The shards given files that are not in yet."""
    if shards is None or shards.listed == 0:
        return []
    given = {_index(i, shards.listed, shards.of) for i in range(shards.listed)}
    return sorted(given - set(shards.done))


def how_to_add(shards: Shards) -> str:
    """The caveat's instruction: the shards still to run."""
    left = missing(shards)
    if len(left) == 1:
        return f"ingest shard {left[0]} of {shards.of} (--shard {left[0]}/{shards.of})"
    return f"ingest shards {number_runs(left)} of {shards.of} (--shard K/{shards.of}, each K)"
