"""Which of a folder's traces are one rank's profiling cycles (analysis/cycles.py): traces of
one rank — by the rank they record, or, where they record none, by the process
tensorboard_trace_handler names them after — of one world, none overlapping another in time or
steps."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from pathlib import Path

from traceview.analysis.cycles import holds_work, joined
from traceview.analysis.rank import RankReport
from traceview.errors import TraceviewError
from traceview.loader.sources import RankIdentity

# tensorboard_trace_handler's file name: the worker (default: host_pid), then the time in ns.
_HANDLER_NAME = re.compile(r"^(?P<worker>.+)\.\d+\.pt\.trace\.json(\.gz)?$")


def worker_of(trace: Path) -> str | None:
    """The process a trace written by tensorboard_trace_handler is named after."""
    found = _HANDLER_NAME.match(trace.name)
    return found["worker"] if found else None


def _key(report: RankReport) -> tuple[str, object]:
    if report.rank is not None:
        return ("rank", report.rank)
    worker = worker_of(report.trace)
    return ("worker", worker) if worker is not None else ("trace", report.trace)


def are_cycles(reports: Sequence[RankReport]) -> bool:
    """One process's cycles: the same world, steps in none of the others, one after another
    in time."""
    if len({(r.world_size, r.backend, r.mode, r.host) for r in reports}) > 1:
        return False
    steps = [s.step for r in reports for s in r.steps]
    if len(steps) != len(set(steps)):
        return False
    spans = sorted((r.total.start_ns, r.total.end_ns) for r in reports if r.total is not None)
    return all(b[0] >= a[1] for a, b in itertools.pairwise(spans))


def ranks_of(
    reports: Sequence[RankReport], files: Sequence[Path]
) -> tuple[list[RankReport], list[tuple[Path, ...]]]:
    """The reports with each rank's cycles made one, in the order of each rank's first trace,
    and the traces each was read from (a cycle set aside for holding no work is not)."""
    groups: dict[tuple[str, object], list[int]] = {}
    for i, report in enumerate(reports):
        groups.setdefault(_key(report), []).append(i)
    out: list[RankReport] = []
    read_from: list[tuple[Path, ...]] = []
    for members in groups.values():
        same = [reports[i] for i in members]
        if len(same) == 1 or not are_cycles(same):
            out += same  # several claims of one rank that are no cycles: refused by the check
            read_from += [(files[i],) for i in members]
            continue
        kept = [i for i in members if holds_work(reports[i])] or members
        aside = [reports[i] for i in members if i not in kept]
        out.append(joined([reports[i] for i in kept], aside))
        by_start = sorted(kept, key=lambda i: _start(reports[i]))
        read_from.append(tuple(files[i] for i in by_start))
    return out, read_from


def _start(report: RankReport) -> int:
    return report.total.start_ns if report.total is not None else 0


def rejoined(cycles: Sequence[RankReport]) -> RankReport:
    """A rank's cycles read again (for their intervals), made one as when first read."""
    return cycles[0] if len(cycles) == 1 else joined(cycles)


def refuse_cycles(folder: Path, traces: Sequence[RankIdentity]) -> None:
    """A store keeps one trace per rank: a rank profiled in several cycles is refused, saying
    what reads it."""
    by_rank: dict[int, list[RankIdentity]] = {}
    for t in traces:
        if t.rank is not None:
            by_rank.setdefault(t.rank, []).append(t)
    for rank, same in by_rank.items():
        spans = sorted(t.epoch_span_ns for t in same if t.epoch_span_ns is not None)
        apart = all(b[0] >= a[1] for a, b in itertools.pairwise(spans))
        if len(same) > 1 and apart:  # a trace without work has no span: a stub cycle
            names = ", ".join(sorted(t.trace.name for t in same)[:3])
            more = ", ..." if len(same) > 3 else ""
            raise TraceviewError(
                f"{folder}: rank {rank} was profiled in {len(same)} cycles ({names}{more}), "
                "and a store keeps one trace per rank: analyze the folder itself (traceview "
                "analyze reads every cycle), or profile one cycle (schedule(..., repeat=1))"
            )
