"""Sharded ingest (`traceview ingest --shard K/N`, docs/store.md "Sharded ingest"): N independent
processes, as a scheduler's array starts them, build one store; until every shard is in, the job
says which are missing and how to add them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.run_cli import traceview, traceview_started
from tests.store.test_store import SWEEP, _json, _paths_out
from traceview.errors import TraceviewError
from traceview.store.layout import JobRecord, Shards, StoredTrace
from traceview.store.shards import Shard, files_of, missing, parsed_shard, recorded

DP4 = SWEEP / "ddp-dp4"  # four rank traces and a run record


def test_shards_split_the_listing_into_contiguous_parts_each_file_once():
    files = [Path(f"rank{i}.json") for i in range(10)]
    parts = [files_of(files, Shard(k, 4)) for k in range(1, 5)]
    assert [len(p) for p in parts] == [3, 2, 3, 2]  # i * 4 // 10 + 1: 1,1,1,2,2,3,3,3,4,4
    assert [f for p in parts for f in p] == files
    # more shards than files: 0 * 4 // 2 + 1 = 1, 1 * 4 // 2 + 1 = 3; shards 2 and 4 get none
    assert files_of(files[:2], Shard(1, 4)) == (files[0],)
    assert files_of(files[:2], Shard(2, 4)) == ()
    assert files_of(files[:2], Shard(3, 4)) == (files[1],)


@pytest.mark.parametrize("text", ["3", "0/2", "3/2", "a/b", "1/0", "-1/2"])
def test_a_shard_is_k_of_n_from_one(text):
    with pytest.raises(ValueError):
        parsed_shard(text)
    assert parsed_shard("2/4") == Shard(2, 4)


def test_the_record_counts_the_shards_in():
    trace = (StoredTrace("/r/rank0.json", 0),)
    assert recorded(None, Shard(2, 4), 8, "j") == Shards(of=4, done=(2,), listed=8)
    first = JobRecord(source="/r", traces=trace, shards=Shards(of=4, done=(2,), listed=8))
    assert recorded(first, Shard(4, 4), 8, "j") == Shards(of=4, done=(2, 4), listed=8)
    whole = JobRecord(source="/r", traces=trace)  # ingested whole before: every shard is in
    assert recorded(whole, Shard(1, 2), 8, "j") == Shards(of=2, done=(1, 2), listed=8)
    assert recorded(first, None, 8, "j") is None  # ingested whole now
    with pytest.raises(TraceviewError, match=r"being ingested in 4 shards \(1, 3–4 not yet in\)"):
        recorded(first, Shard(1, 2), 8, "j")


def test_a_shard_given_no_file_is_not_waited_for():
    # 2 files in 4 shards: shards 1 and 3 hold one each (0 * 4 // 2 + 1, 1 * 4 // 2 + 1).
    assert missing(Shards(of=4, done=(1,), listed=2)) == [3]
    assert missing(Shards(of=4, done=(1, 3), listed=2)) == []
    assert missing(None) == []


@pytest.mark.cli
def test_two_shards_at_once_make_the_store_one_ingest_makes(tmp_path):
    store = tmp_path / "S"
    shards = [
        traceview_started("ingest", DP4, "--store", store, "--shard", f"{k}/2", "--jobs", "1")
        for k in (1, 2)
    ]
    for proc in shards:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert "2 rank partitions written" in out, out
    whole = tmp_path / "W"
    assert traceview("ingest", DP4, "--store", whole).code == 0
    assert _paths_out(_json("analyze", store)) == _paths_out(_json("analyze", whole))
    assert _paths_out(_json("ranks", store)) == _paths_out(_json("ranks", whole))
    assert "being ingested in" not in traceview("analyze", store).out  # all in: nothing said


@pytest.mark.cli
def test_until_every_shard_is_in_each_output_names_the_missing_one(tmp_path):
    store = tmp_path / "S"
    done = traceview("ingest", DP4, "--store", store, "--shard", "2/2")
    assert done.code == 0, done.err
    said = (
        "the job is being ingested in 2 shards and shard 1 is not in the store yet, so every "
        "figure across ranks leaves out their ranks: ingest shard 1 of 2 (--shard 1/2)"
    )
    text = traceview("analyze", store)
    assert text.code == 0, text.err
    assert f"caveat (ranks 2, 3): {said}" in text.out
    notes = [n["message"] for r in _json("analyze", store)["ranks"] for n in r["notes"]]
    assert notes.count(said) == 2
    # the ranks never ingested are said once, by the shards' note, not again by the world size
    assert not [n for n in notes if "world size" in n or "run record names" in n]


@pytest.mark.cli
def test_a_rank_in_two_shards_files_is_refused_and_ray_with_shards_too(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(DP4, run)
    (run / "run.json").unlink()
    (run / "rank3.pt.trace.json.gz").unlink()
    shutil.copy(run / "rank0.pt.trace.json.gz", run / "rank9.pt.trace.json.gz")  # rank 0 again
    store = tmp_path / "S"
    assert traceview("ingest", run, "--store", store, "--shard", "1/2").code == 0
    again = traceview("ingest", run, "--store", store, "--shard", "2/2")
    assert again.code == 2, again.err
    assert again.err.strip().endswith(
        "rank 0 is in both rank0.pt.trace.json.gz and rank9.pt.trace.json.gz: one trace per rank"
    ), again.err
    assert json.loads((store / "job=run" / "job.json").read_text())["shards"]["done"] == [1]
    other_n = traceview("ingest", run, "--store", store, "--shard", "1/4")
    assert other_n.code == 2 and other_n.out == "", other_n.out  # refused before any work
    assert other_n.err.strip() == (
        "traceview: error: job 'run' is being ingested in 2 shards (2 not yet in): ingest the "
        "rest with --shard K/2, or the whole run without --shard"
    )
    ray = traceview("ingest", run, "--store", store, "--shard", "1/2", "--engine", "ray")
    assert ray.code == 2 and len(ray.err.strip().splitlines()) == 1, ray.err
    assert "use one or the other" in ray.err
