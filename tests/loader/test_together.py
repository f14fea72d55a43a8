"""Small traces analysed several to a worker, their models built together (loader/parallel.py):
which traces go together, and that each gets exactly the report it gets alone — a trace that
fails among them fails alone, with the message it has alone."""

from __future__ import annotations

import gc
import gzip
import os
import shutil
from pathlib import Path

import msgspec

from tests.reports import same
from traceview.analysis.rank import RankReport
from traceview.loader import parallel
from traceview.loader.parallel import (
    GROUPS_PER_WORKER,
    TOGETHER_AT_MOST,
    Failure,
    Options,
    analyze_many,
    reports_together,
    together,
)
from traceview.loader.rank import analyze_trace, measured
from traceview.parse import Trace

ROOT = Path(__file__).parents[2]
FIXTURES = ROOT / "tests/fixtures/traces"
SWEEP = ROOT / "sample_traces/cpu_sweep"
TRACES = [
    FIXTURES / "nccl_ddp_w2_rank0_step5.json.gz",
    FIXTURES / "nccl_w8_rank3_step1010.json.gz",
    FIXTURES / "gloo_cpu_w300_rank34.json.gz",
    ROOT / "tests/fixtures/gpu_sweep/zero3-dp1/rank0.pt.trace.json.gz",
    *sorted(SWEEP.glob("zero2-dp4/rank*.pt.trace.json.gz")),
    *sorted(SWEEP.glob("ddp-dp2/rank*.pt.trace.json.gz")),
]


def sized(tmp_path: Path, name: str, size: int) -> Path:
    path = tmp_path / name
    path.write_bytes(b" " * size)
    return path


def zipped(tmp_path: Path, name: str, size: int) -> Path:
    """A gzip of `size` bytes of JSON (spaces: a few KB on disk)."""
    path = tmp_path / name
    path.write_bytes(gzip.compress(b" " * size))
    return path


def test_small_traces_go_together_as_many_groups_as_keep_every_worker_busy(tmp_path):
    small = [sized(tmp_path, f"s{i}.json", 1000) for i in range(40)]
    large = sized(tmp_path, "large.json", 9 << 20)
    # Alone however small on disk: a gzip of 9 MB of JSON (its trailer says so), and 2 MB of
    # gzip (taken to hold at least 8 times that), whatever its name.
    holds_much = zipped(tmp_path, "small-on-disk.json.gz", 9 << 20)
    assert holds_much.stat().st_size < 100_000
    dense = tmp_path / "dense.json"
    dense.write_bytes(gzip.compress(os.urandom(2 << 20), compresslevel=0))
    paths = [*small[:20], large, holds_much, dense, *small[20:]]
    groups = together(paths, workers=2)
    # 40 small traces, 2 workers, 4 groups a worker: 5 to a group, in order, the large alone.
    assert 40 // (2 * GROUPS_PER_WORKER) == 5
    assert groups[:4] == [
        [0, 1, 2, 3, 4],
        [5, 6, 7, 8, 9],
        [10, 11, 12, 13, 14],
        [15, 16, 17, 18, 19],
    ]
    assert groups[4:7] == [[20], [21], [22]]
    assert groups[7] == [23, 24, 25, 26, 27] and len(groups) == 8 + 3
    # A small gzip goes with the others (8 traces, 1 worker: two to a group).
    assert together([zipped(tmp_path, "t.json.gz", 1000), *small[:7]], workers=1)[0] == [0, 1]
    # Never more than TOGETHER_AT_MOST at once; a few traces for many workers: each alone.
    assert max(map(len, together(small * 10, workers=1))) == TOGETHER_AT_MOST
    assert together(small[:4], workers=2) == [[0], [1], [2], [3]]
    # A path that cannot be read goes alone (its worker says why).
    assert together([tmp_path / "missing.json", *small[:8]], workers=1)[0] == [0]


def test_each_trace_reported_together_is_reported_as_alone(tmp_path):
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(gzip.compress(TRACES[0].read_bytes()[:5000]))  # gzip of a cut gzip
    cut = tmp_path / "cut.json"
    cut.write_bytes(gzip.decompress(TRACES[1].read_bytes())[:200_000])  # a trace cut short
    paths = [broken, *TRACES[:3], cut, *TRACES[3:]]
    options = Options(keep_intervals=True)
    alone = []
    for path in paths:
        got = list(reports_together([path], options))
        assert len(got) == 1
        alone.append(got[0])
    assert isinstance(alone[0], Failure) and "broken.json.gz" in alone[0].message
    assert isinstance(alone[4], RankReport) and alone[4].truncated
    made = list(reports_together(paths, options))
    assert len(made) == len(paths)
    for path, a, b in zip(paths, made, alone, strict=True):
        assert same(a, b), path.name
    # The same as the one-trace entry point.
    direct = analyze_trace(TRACES[2], keep_intervals=True)
    assert same(direct, alone[3])


def test_a_many_trace_load_in_workers_gives_each_trace_its_own_report(tmp_path):
    # Enough small traces for groups of two with two workers, a bad file among them.
    folder = tmp_path / "ranks"
    folder.mkdir()
    paths = []
    for i, trace in enumerate(TRACES * 2):
        paths.append(folder / f"{i:02d}-{trace.name}")
        shutil.copy(trace, paths[-1])
    bad = folder / "bad.json"
    bad.write_text("this is no trace at all")
    paths.insert(5, bad)
    options = Options(keep_intervals=False)
    seen: list[int] = []
    found = analyze_many(paths, options=options, jobs=2, on_done=lambda k, n, o: seen.append(k))
    assert seen == list(range(1, len(paths) + 1))
    for path, outcome in zip(paths, found, strict=True):
        (expected,) = list(reports_together([path], options))
        assert same(outcome, expected), path.name
    assert isinstance(found[5], Failure) and "bad.json" in found[5].message
    assert sum(isinstance(o, RankReport) for o in found) == len(paths) - 1
    assert msgspec.structs.asdict(found[0])["trace"] == paths[0]


def test_no_trace_holds_its_events_while_the_group_is_measured(monkeypatch):
    # The events are the largest thing a load holds: once the timelines are built, every trace
    # of the group is kept as its description alone while the reports are measured.
    held: list[int] = []

    def measured_watched(modelled, keep_intervals):
        gc.collect()
        held.append(sum(type(o) is Trace and o.events.height > 0 for o in gc.get_objects()))
        return measured(modelled, keep_intervals)

    monkeypatch.setattr(parallel, "measured", measured_watched)
    made = list(reports_together(TRACES[:3], Options()))
    assert all(isinstance(r, RankReport) for r in made)
    assert held == [0]
