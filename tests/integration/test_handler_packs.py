"""The profiler handler packs a job once its last rank is stored (handler_job.py, real torchrun
processes): the rank that completes the job starts `traceview pack` aside, the store reads as
the traces do, and a rank stored again completes nothing."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.run_cli import traceview
from tests.procs import command_line, wait_gone
from traceview.loader.ingest import Written, _completed
from traceview.store import layout

JOB = Path(__file__).with_name("handler_job.py")


def _packers(store: Path) -> list[int]:
    """The `traceview pack` processes working on `store`."""
    said = f"traceview pack {store} "
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and said in command_line(int(p))]


@pytest.mark.torchrun
def test_the_rank_that_completes_a_job_packs_it(tmp_path):
    traces, store = tmp_path / "traces", tmp_path / "store"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc_per_node=2", str(JOB), str(traces), str(store), "2"]  # fmt: skip
    for _ in range(2):  # a launch on a loaded machine can lose a Gloo connection: once more
        proc = subprocess.run(torchrun, capture_output=True, text=True, timeout=240)
        if proc.returncode == 0:
            break
        shutil.rmtree(tmp_path, ignore_errors=True)
        tmp_path.mkdir()
    assert proc.returncode == 0, proc.stderr[-3000:]
    left = wait_gone(_packers(store), timeout=120)
    for pid in left:
        os.kill(pid, 9)
    assert not left, "the pack did not end"
    record = layout.read_job_record(store, "traces")
    assert record is not None and record.packed == ("0", "1")
    assert sorted(p.name for p in layout.job_dir(store, "traces").iterdir()) == [
        "job.json",
        "pack",
    ]
    stored = traceview("analyze", store, "--job", "traces", "--format", "json")
    read = traceview("analyze", traces, "--format", "json")
    assert stored.code == read.code == 0, stored.err + read.err
    ranks = [json.loads(r.out)["ranks"] for r in (stored, read)]
    for rank in ranks:
        for r in rank:
            del r["trace"], r["job"]  # where each was read from
    assert ranks[0] == ranks[1]


def _record(*ranks: int) -> layout.JobRecord:
    return layout.JobRecord(
        source="/t", traces=tuple(layout.StoredTrace(f"/t/rank{r}", r) for r in ranks)
    )


def test_only_the_first_commit_of_the_last_rank_completes_a_job():
    def stored(rank: int | None, world: int | None = 3) -> Written:
        return Written(Path(f"/t/rank{rank}"), Path("p"), rank, world, "nccl", None, None, ())

    assert _completed(_record(0, 1), _record(0, 1, 2), stored(2)) == 3
    assert _completed(_record(0), _record(0, 2), stored(2)) is None  # rank 1 not in yet
    assert _completed(_record(0, 1, 2), _record(0, 1, 2), stored(2)) is None  # stored again
    assert _completed(None, _record(0), stored(0, world=None)) is None  # no world size known
    assert _completed(None, _record(0), stored(0, world=1)) == 1
