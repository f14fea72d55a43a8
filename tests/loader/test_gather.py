"""Ranks of one launch written into several hosts' folders are read as one job when the folders
are named together (loader/gather.py): hand-built traces, each naming its launch or not."""

from __future__ import annotations

import json

import pytest

import traceview
from tests import tracebuild as tb


def folder(tmp_path, host: str, rank: int, launch: str | None, record: bool = False):
    where = tmp_path / host / "job"
    where.mkdir(parents=True)
    run = {"strategy": "ddp", "world_size": 2, **({"run_id": launch} if launch else {})}
    doc = tb.document(tb.gpu_example(group=2), rank=rank, world=2, traceview_run=run)
    tb.write(where / f"rank{rank}.json", doc)
    if record:
        (where / "run.json").write_text("{}")  # where rank 0 wrote the run record (its content
        # is not read here)
    return where


@pytest.mark.parametrize(
    ("launches", "ranks", "jobs"),
    [
        (("a/1", "a/1"), (0, 1), [[0, 1]]),  # one launch, two hosts: one job
        (("a/1", "a/2"), (0, 1), [[0], [1]]),  # two launches
        (("a/1", "a/1"), (0, 0), [[0], [0]]),  # one launch cannot hold rank 0 twice
        ((None, None), (0, 1), [[0], [1]]),  # traces that name no launch are not guessed at
    ],
)
def test_folders_of_one_launch_are_one_job(tmp_path, launches, ranks, jobs):
    folders = [folder(tmp_path, f"host{i}", r, launch)
               for i, (r, launch) in enumerate(zip(ranks, launches, strict=True))]  # fmt: skip
    runs = traceview.load_runs(folders)
    assert [[r.rank for r in job.ranks] for job in runs.jobs] == jobs


def test_the_gathered_job_lives_where_the_run_record_is(tmp_path):
    first = folder(tmp_path, "host0", 1, "a/1")
    second = folder(tmp_path, "host1", 0, "a/1", record=True)
    record = json.loads((tmp_path / "host1" / "job" / "rank0.json").read_text())
    assert record["traceview_run"]["run_id"] == "a/1"
    (job,) = traceview.load_runs([first, second]).jobs
    assert job.folder == second  # named second, but it holds the run record
    assert [r.rank for r in job.ranks] == [0, 1]
    assert [f.parent for (f,) in job.rank_files] == [second, first]  # each rank's own file
    assert job.intervals["rank"].unique().sort().to_list() == [0, 1]  # read again from there


def rank_folder(parent, rank: int, world: int):
    where = parent / f"rank{rank}"
    where.mkdir(parents=True)
    doc = tb.document(tb.gpu_example(group=world), rank=rank, world=world)
    tb.write(where / f"host_{100 + rank}.1.pt.trace.json", doc)


def test_a_folder_per_rank_of_one_world_is_one_job(tmp_path):
    for rank in (0, 1):
        rank_folder(tmp_path / "job", rank, 2)
    (job,) = traceview.load_runs([tmp_path / "job"]).jobs
    assert job.folder == tmp_path / "job"
    assert [r.rank for r in job.ranks] == [0, 1]
    assert "gathered from 2 folders" in job.ranks[0].notes[-1].message


def test_rank_folders_of_different_worlds_stay_apart(tmp_path):
    rank_folder(tmp_path / "job", 0, 2)
    rank_folder(tmp_path / "job", 1, 4)
    runs = traceview.load_runs([tmp_path / "job"])
    assert [[r.rank for r in job.ranks] for job in runs.jobs] == [[0], [1]]


def test_rank_folders_of_one_world_are_listed_as_one_run(tmp_path):
    # As the dashboard lists runs and ingest names jobs: the folder, once, read from its heads.
    rank_folder(tmp_path / "job", 0, 2)
    rank_folder(tmp_path / "job", 1, 2)
    (run,) = traceview.find_runs([tmp_path])
    assert run.folder == tmp_path / "job"
    assert run.parts == (tmp_path / "job" / "rank0", tmp_path / "job" / "rank1")
    assert [f.parent.name for f in run.files] == ["rank0", "rank1"]
    assert [r.rank for r in traceview.load(tmp_path / "job").ranks] == [0, 1]


@pytest.mark.parametrize(
    "ranks, worlds",
    [
        ((0, 0), (2, 2)),  # rank 0 twice: two runs
        ((0, 1), (2, 4)),  # two world sizes
        ((0, 0), (1, 1)),  # each folder a whole world
    ],
)
def test_folders_that_are_no_parts_of_one_world_are_listed_apart(tmp_path, ranks, worlds):
    for at, (rank, world) in enumerate(zip(ranks, worlds, strict=True)):
        where = tmp_path / "job" / f"part{at}"
        where.mkdir(parents=True)
        doc = tb.document(tb.gpu_example(group=world), rank=rank, world=world)
        tb.write(where / f"host_{100 + at}.1.pt.trace.json", doc)
    runs = traceview.find_runs([tmp_path])
    assert [r.folder.name for r in runs if r.folder] == ["part0", "part1"]
    assert all(not r.parts for r in runs)


def test_a_folder_with_a_run_record_is_never_a_part(tmp_path):
    rank_folder(tmp_path / "job", 0, 2)
    rank_folder(tmp_path / "job", 1, 2)
    (tmp_path / "job" / "rank1" / "run.json").write_text("{}")
    assert len(traceview.find_runs([tmp_path])) == 2


def test_several_hosts_files_in_one_folder_are_one_job(tmp_path):
    # tensorboard_trace_handler on two hosts, their files copied into one folder: the ranks
    # are known from distributedInfo alone, each host's two ranks in files named by host.
    for rank in range(4):
        host = f"node{rank // 2}"
        doc = tb.document(tb.gpu_example(group=4), rank=rank, world=4, host_name=host)
        tb.write(tmp_path / f"{host}_{100 + rank}.1700000000000000000.pt.trace.json", doc)
    (job,) = traceview.load_runs([tmp_path]).jobs
    assert [r.rank for r in job.ranks] == [0, 1, 2, 3]
    assert [r.host for r in job.ranks] == ["node0", "node0", "node1", "node1"]


def test_a_rank_without_a_trace_is_named(tmp_path):
    # An 8-rank job, no run record, rank 5's trace not in the folder: every rank says so.
    for rank in (0, 1, 2, 3, 4, 6, 7):
        doc = tb.document(tb.gpu_example(group=8), rank=rank, world=8)
        tb.write(tmp_path / f"rank{rank}.json", doc)
    (job,) = traceview.load_runs([tmp_path]).jobs
    said = [n.message for r in job.ranks for n in r.notes if n.caveat]
    assert (
        said
        == [
            "the traces say world size 8, and rank 5 has no trace among them: figures across ranks "
            "cover the 7 ranks read"
        ]
        * 7
    )
