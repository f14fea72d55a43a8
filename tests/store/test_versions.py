"""What a reader of a store gets while writers change it: one commit's job, never a rank's
totals from one ingest and its steps from the next; a summary that is not the one its job
record names is damage, said; a commit stopped anywhere leaves every partition readable."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import traceview
from tests.cli.run_cli import traceview as run_cli
from tests.cli.run_cli import traceview_started
from tests.store.test_store import SWEEP
from traceview.errors import TraceviewError
from traceview.store import lock

VERSION_A, VERSION_B = SWEEP / "ddp-dp2", SWEEP / "zero1-dp2"  # one job, ingested two ways


def _ingest(source: Path, store: Path) -> None:
    done = run_cli("ingest", source, "--store", store, "--job", "J")
    assert done.code == 0, done.err


def _said(job: traceview.Job) -> dict[int | None, tuple[str, object, object]]:
    """Per rank: the trace it was read from, its totals and its steps."""
    return {r.rank: (str(r.trace), r.total, r.steps) for r in job.ranks}


@pytest.mark.cli
def test_a_commit_waits_for_a_reader_and_a_reader_for_a_commit(tmp_path):
    store = tmp_path / "S"
    _ingest(VERSION_A, store)
    before = _said(traceview.load(store / "job=J"))
    with lock.reading([store]):  # a reader, mid-read
        writer = traceview_started("ingest", VERSION_B, "--store", store, "--job", "J")
        time.sleep(6)  # long enough to parse both traces and reach the commit
        assert writer.poll() is None, writer.communicate()
        assert _said(traceview.load(store / "job=J")) == before  # nothing replaced meanwhile
    assert writer.wait(timeout=120) == 0, writer.communicate()
    after = _said(traceview.load(store / "job=J"))
    assert {t for t, _, _ in after.values()} == {
        str(p) for p in sorted(VERSION_B.glob("rank*.json.gz"))
    }
    # A commit mid-way (the lock held, a partition moved aside): a reader waits for it, and
    # never says the rank is missing.
    with (store / lock.WRITER_LOCK).open("r+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        aside = store / "job=J" / ".rank=1.old-test"
        (store / "job=J" / "rank=1").rename(aside)
        reader = traceview_started("analyze", store, "--format", "json")
        time.sleep(4)
        assert reader.poll() is None, reader.communicate()
        aside.rename(store / "job=J" / "rank=1")
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err
    assert json.loads(out)["jobs"][0]["ranks"] == 2
    assert err.startswith("traceview: waiting: a writer is moving partitions into the store "), err


@pytest.mark.slow
def test_a_reader_never_mixes_two_ingests_of_a_job(tmp_path):
    store = tmp_path / "S"
    expected = {}
    for version in (VERSION_A, VERSION_B):
        _ingest(version, store)
        expected[version] = _said(traceview.load(store / "job=J"))

    # Two writers ingest the two versions over each other while this process reads the job.
    script = (
        "import subprocess, sys\n"
        "for _ in range(6):\n"
        "    subprocess.run([sys.executable, '-m', 'traceview', 'ingest', sys.argv[1],"
        " '--store', sys.argv[2], '--job', 'J'], check=True, capture_output=True)\n"
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", script, str(v), str(store)])
        for v in (VERSION_A, VERSION_B)
    ]
    reads, seen = 0, set()
    try:
        while any(w.poll() is None for w in writers):
            said = _said(traceview.load(store / "job=J"))
            version = VERSION_A if said == expected[VERSION_A] else VERSION_B
            assert said == expected[version], "a read mixed two ingests of the job"
            reads += 1
            seen.add(version)
    finally:
        for w in writers:
            w.wait(timeout=600)
    assert all(w.returncode == 0 for w in writers)
    assert reads >= 20 and seen == {VERSION_A, VERSION_B}, (reads, seen)


def _summary(store: Path, rank: int) -> Path:
    return store / "job=J" / f"rank={rank}" / "summary.json"


@pytest.mark.cli
def test_a_changed_summary_is_named_and_ingest_again_repairs_it(tmp_path):
    store = tmp_path / "S"
    _ingest(VERSION_A, store)
    summary = _summary(store, 1)
    stored = json.loads(summary.read_text())
    stored["report"]["total"]["compute_ns"] += 1_000  # valid JSON, other numbers
    summary.write_text(json.dumps(stored))
    done = run_cli("analyze", store)
    assert done.code == 2, done.out
    assert f"{summary}: damaged: not the summary stored at ingest" in done.err
    assert "ingest its trace again" in done.err and done.err.count("\n") == 1
    again = run_cli("ingest", VERSION_A, "--store", store, "--job", "J")
    assert "1 rank partition written, 1 unchanged" in again.out, again.out
    assert run_cli("analyze", store).code == 0


@pytest.mark.cli
def test_a_commit_stopped_before_or_after_its_moves_leaves_each_partition_readable(tmp_path):
    # Two stores of the same job, one per copy of its traces: a commit of the second over the
    # first, stopped after its first record (accepting both summaries), with none, or one, of
    # its partitions moved.
    a, b = tmp_path / "A", tmp_path / "B"
    copy = shutil.copytree(VERSION_A, tmp_path / "copy")
    _ingest(VERSION_A, a)
    _ingest(copy, b)
    record = json.loads((a / "job=J" / "job.json").read_text())
    theirs = json.loads((b / "job=J" / "job.json").read_text())["summaries"]
    record["summaries"] = {k: sorted({*v, *theirs[k]}) for k, v in record["summaries"].items()}
    (a / "job=J" / "job.json").write_text(json.dumps(record))
    assert run_cli("analyze", a).code == 0
    shutil.rmtree(a / "job=J" / "rank=1")
    shutil.copytree(b / "job=J" / "rank=1", a / "job=J" / "rank=1")
    job = traceview.load(a / "job=J")
    assert [str(r.trace) for r in job.ranks] == [
        str(VERSION_A / "rank0.pt.trace.json.gz"),
        str(copy / "rank1.pt.trace.json.gz"),
    ]


@pytest.mark.cli
def test_what_a_load_left_out_is_not_read_from_a_later_ingest(tmp_path):
    store = tmp_path / "S"
    _ingest(VERSION_A, store)
    job = traceview.load(store / "job=J")  # without its intervals
    assert job.intervals_of([0]).height > 0
    _ingest(VERSION_B, store)
    with pytest.raises(TraceviewError, match="ingested again since its job was read"):
        job.intervals_of([1])
    with pytest.raises(TraceviewError, match="ingested again since its job was read"):
        _ = job.work
