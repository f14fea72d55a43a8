"""Runs read from a trace store: each rank's report from its partition, no trace parsed (the
rank's intervals only when asked for). What a stored job lacks: store/completeness.py."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from traceview.loader.parallel import DoneFn, Options, Outcome, guarded
from traceview.store.partition import check_pattern, read_partition, read_stored


def read_partitions(
    partitions: Sequence[Path], options: Options, on_done: DoneFn | None = None
) -> list[Outcome]:
    if partitions:  # the usual mismatch (a whole store, another pattern): said once
        check_pattern(read_stored(partitions[0]), partitions[0], options.comm_pattern)
    outcomes: list[Outcome] = []
    for i, folder in enumerate(partitions):
        outcomes.append(
            guarded(
                folder,
                lambda f=folder: read_partition(  # type: ignore[misc]
                    f, keep_intervals=options.keep_intervals, comm_pattern=options.comm_pattern
                ),
            )
        )
        if on_done:
            on_done(i + 1, len(partitions), outcomes[-1])
    return outcomes
