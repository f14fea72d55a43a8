"""Which trace files a PATH names, and whether the traces of one folder form one job."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from traceview.analysis.report import RankReport
from traceview.errors import TraceviewError
from traceview.parse.run_record import incomplete_run
from traceview.parse.source import STDIN

TRACE_SUFFIXES = (".json", ".json.gz")
NOT_TRACES = {"run.json", "index.json"}  # the harness's own records live beside its traces
STATUS_SUFFIX = ".status.json"  # and, while a run is going (or if it stopped), each rank's


def is_trace_file(path: Path) -> bool:
    """The trace-file rule: a .json or .json.gz file, not one of the harness's records."""
    name = path.name
    return (
        name.endswith(TRACE_SUFFIXES)
        and name not in NOT_TRACES
        and not name.endswith(STATUS_SUFFIX)
        and not name.startswith(".")
        and path.is_file()
    )


# Ranks of one job are profiled together; their wall-clock spans cannot be this far apart.
SAME_JOB_SLACK_NS = 10 * 60 * 10**9


@dataclass(frozen=True)
class TraceGroup:
    """The traces named by one PATH: a single file, or a folder of one job's rank traces."""

    source: Path
    files: tuple[Path, ...]
    is_folder: bool


def resolve(paths: Sequence[str | Path]) -> list[TraceGroup]:
    groups = []
    for raw in paths:
        path = Path(raw)
        if str(raw) == STDIN:
            groups.append(TraceGroup(path, (path,), is_folder=False))
        elif path.is_dir():
            files = tuple(sorted(p for p in path.iterdir() if is_trace_file(p)))
            if not files:
                why = incomplete_run(path)
                raise TraceviewError(
                    f"{path}: {why}" if why else f"{path}: no trace files (*.json, *.json.gz)"
                )
            groups.append(TraceGroup(path, files, is_folder=True))
        elif path.exists():
            groups.append(TraceGroup(path, (path,), is_folder=False))
        else:
            raise TraceviewError(f"{path}: no such file or folder")
    return groups


def check_one_job(folder: Path, reports: Sequence[RankReport]) -> None:
    """A folder is one job: no rank twice, one world size and backend, overlapping wall time."""
    by_rank: dict[int, RankReport] = {}
    for r in reports:
        if r.rank is None:
            continue
        if r.rank in by_rank:
            raise TraceviewError(
                f"{folder}: rank {r.rank} is claimed by both {by_rank[r.rank].trace.name} "
                f"and {r.trace.name}"
            )
        by_rank[r.rank] = r
    for attr in ("world_size", "backend"):
        seen = {getattr(r, attr): r for r in reports if getattr(r, attr) is not None}
        if len(seen) > 1:
            (a, ra), (b, rb) = list(seen.items())[:2]
            raise TraceviewError(
                f"{folder}: mixes traces of different jobs ({ra.trace.name}: {attr} {a}, "
                f"{rb.trace.name}: {attr} {b})"
            )
    spans = [(r.epoch_span_ns, r) for r in reports if r.epoch_span_ns is not None]
    if spans:
        latest_start = max(spans, key=lambda s: s[0][0])
        earliest_end = min(spans, key=lambda s: s[0][1])
        gap = latest_start[0][0] - earliest_end[0][1]
        if gap > SAME_JOB_SLACK_NS:
            raise TraceviewError(
                f"{folder}: mixes traces of different jobs ({earliest_end[1].trace.name} ends "
                f"{gap / 3.6e12:.1f} h before {latest_start[1].trace.name} starts)"
            )
