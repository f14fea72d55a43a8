"""Packed jobs (docs/store.md, "Packed jobs"): a job's partitions moved into one file per table
read as the partitions were, output for output; each rank in one place; the store's promises
(hashes checked, a killed writer's pack put back) kept."""

from __future__ import annotations

import gzip
import json
import pickle
import shutil
from pathlib import Path

import pytest

from tests.cli.run_cli import traceview
from tests.store.test_store import SWEEP
from traceview.loader.stored import BATCH, batches
from traceview.store import layout

JOBS = ("ddp-dp4", "zero3-dp4")
COMMANDS = (
    ("analyze", "--format", "json"),
    ("ranks", "--format", "json"),
    ("collectives", "--format", "json"),
    ("critical-path", "--format", "json"),
)


def _outputs(store: Path, tmp: Path) -> dict[str, str]:
    """Every command's output on each job (the timeline too: every rank's intervals), and a
    diff of the two (each rank's time per step and name of work)."""
    out = {}
    for job in JOBS:
        for command in COMMANDS:
            done = traceview(command[0], store, "--job", job, *command[1:])
            assert done.code == 0, done.err
            out[f"{command[0]} {job}"] = done.out
        timeline = tmp / f"{job}.json"
        assert traceview("export", store, "--job", job, "-o", timeline).code == 0
        out[f"export {job}"] = timeline.read_text()
    diff = traceview("diff", store / "job=ddp-dp4", store / "job=zero3-dp4", "--format", "json")
    assert diff.code == 0, diff.err
    out["diff"] = diff.out
    return out


@pytest.fixture
def store(tmp_path) -> Path:
    where = tmp_path / "S"
    for job in JOBS:
        shutil.copytree(SWEEP / job, tmp_path / "runs" / job)
    assert traceview("ingest", tmp_path / "runs", "--store", where).code == 0
    return where


@pytest.mark.cli
def test_a_packed_job_reads_as_its_partitions_did_output_for_output(store, tmp_path):
    before = _outputs(store, tmp_path)
    done = traceview("pack", store)
    assert done.code == 0, done.err
    assert f"{store}: job ddp-dp4: 4 ranks in its pack" in done.out
    for job in JOBS:
        assert sorted(p.name for p in (store / f"job={job}").iterdir()) == [
            "job.json", "pack", "run.json"
        ]  # fmt: skip
        assert sorted(p.name for p in (store / f"job={job}" / "pack").iterdir()) == [
            "calls.parquet", "intervals.parquet", "steps.parquet", "summaries.json",
            "work.parquet",
        ]  # fmt: skip
    assert _outputs(store, tmp_path) == before
    again = traceview("pack", store, "--job", "ddp-dp4")
    assert again.out.strip() == f"{store}: job ddp-dp4: nothing to pack"


@pytest.mark.cli
def test_a_rank_ingested_after_the_pack_is_read_from_its_partition_until_the_next(store, tmp_path):
    assert traceview("pack", store).code == 0
    runs = tmp_path / "runs"
    unchanged = traceview("ingest", runs, "--store", store)
    assert "0 rank partitions written, 8 unchanged" in unchanged.out  # known from the pack
    trace = runs / "ddp-dp4" / "rank2.pt.trace.json.gz"
    trace.write_bytes(gzip.compress(gzip.decompress(trace.read_bytes()) + b"\n"))
    changed = traceview("ingest", runs, "--store", store)
    assert "1 rank partition written, 7 unchanged" in changed.out, changed.out
    job = store / "job=ddp-dp4"
    assert (job / "rank=2").is_dir() and (job / "pack").is_dir()
    direct = traceview("analyze", runs / "ddp-dp4", "--format", "json").out
    stored = traceview("analyze", store, "--job", "ddp-dp4", "--format", "json").out
    said = stored.replace(str(job), str(runs / "ddp-dp4"))  # the job's folder, its traces'
    assert said == direct
    assert traceview("pack", store, "--job", "ddp-dp4").code == 0
    assert not (job / "rank=2").exists()
    assert traceview("analyze", store, "--job", "ddp-dp4", "--format", "json").out == stored


@pytest.mark.cli
def test_ingest_packs_a_job_of_many_ranks_itself(tmp_path, monkeypatch):
    from traceview.loader import ingest as ingest_module
    from traceview.store import pack

    assert pack.PACK_FROM_RANKS == 256
    monkeypatch.setattr(ingest_module, "PACK_FROM_RANKS", 4)  # the rule, at a size a test has
    store = tmp_path / "S"
    ingest_module.ingest([SWEEP / "ddp-dp4", SWEEP / "ddp-dp2"], store, jobs=1)
    assert (store / "job=ddp-dp4" / "pack").is_dir()
    assert not list((store / "job=ddp-dp4").glob("rank=*"))
    assert not (store / "job=ddp-dp2" / "pack").exists()  # two ranks: left as partitions
    assert sorted(p.name for p in (store / "job=ddp-dp2").glob("rank=*")) == ["rank=0", "rank=1"]


@pytest.mark.cli
def test_a_damaged_pack_is_named_never_read_as_other_numbers(store):
    assert traceview("pack", store).code == 0
    calls = store / "job=ddp-dp4" / "pack" / "calls.parquet"
    data = bytearray(calls.read_bytes())
    data[len(data) // 2] ^= 0xFF
    calls.write_bytes(bytes(data))
    done = traceview("collectives", store, "--job", "ddp-dp4")
    assert done.code == 2
    assert f"{calls}: damaged: not the bytes stored at ingest" in done.err
    summaries = store / "job=zero3-dp4" / "pack" / "summaries.json"
    summaries.write_text(summaries.read_text().replace('"rank":1', '"rank":2', 1))
    done = traceview("ranks", store, "--job", "zero3-dp4")
    assert done.code == 2
    assert f"{summaries}: damaged: not the summary stored at ingest" in done.err


@pytest.mark.cli
def test_a_pack_a_killed_writer_moved_aside_is_put_back_by_the_next_writer(store, tmp_path):
    assert traceview("pack", store).code == 0
    before = traceview("ranks", store, "--job", "ddp-dp4", "--format", "json").out
    job = store / "job=ddp-dp4"
    (job / "pack").rename(job / ".pack.old-0123abcd")  # where a move into place stops
    assert traceview("ingest", tmp_path / "runs" / "zero3-dp4", "--store", store).code == 0
    assert (job / "pack").is_dir() and not list(job.glob(".pack.old-*"))
    assert traceview("ranks", store, "--job", "ddp-dp4", "--format", "json").out == before


@pytest.mark.cli
def test_sql_reads_a_packed_job_with_its_rank_as_a_column(store):
    duckdb = pytest.importorskip("duckdb")
    assert traceview("pack", store).code == 0
    rows = duckdb.sql(
        f"SELECT job, rank, step, exposed_comm_ns FROM read_parquet('{store}/job=*/pack/"
        "steps.parquet', hive_partitioning = true)"
    ).fetchall()
    analyzed = {
        (job, r["rank"], s["step"]): round(s["exposed_comm_us"] * 1000)
        for job in JOBS
        for r in json.loads(traceview("analyze", SWEEP / job, "--format", "json").out)["ranks"]
        for s in r["steps"]
    }
    got = {(job, rank, step): ns for job, rank, step, ns in rows}
    assert got.keys() == analyzed.keys()
    assert all(abs(got[k] - ns) <= 1000 for k, ns in analyzed.items())  # µs in the document


def test_a_pack_is_read_in_one_batch_and_partitions_in_batches_of_their_own():
    job = Path("S/job=j")

    def packed(rank: int) -> layout.PackPlace:
        return layout.PackPlace(job / "pack", str(job / "pack"), f"rank={rank}")

    places = [job / "rank=0", packed(1), packed(2), job / "rank=3"]
    assert list(batches(places)) == [(0, 1), (1, 3), (3, 4)]
    many = [packed(r) for r in range(3 * BATCH)]
    assert list(batches(many)) == [(0, 3 * BATCH)]
    loose = [job / f"rank={r}" for r in range(BATCH + 1)]
    assert list(batches(loose)) == [(0, BATCH), (BATCH, BATCH + 1)]


def test_a_parent_in_object_storage_is_made_once_and_is_the_parent():
    from upath import UPath

    from traceview.store.layout import parent_of

    places = [UPath(f"s3://bkt/store/job=a/pack-1/rank={k}") for k in range(3)]
    parents = [parent_of(p) for p in places]
    assert all(p is parents[0] for p in parents)  # one object, shared
    assert str(parents[0]) == str(places[0].parent)
    for url in ("s3://bkt", "s3://other", "s3://bkt/a", "s3://other/a/b/"):
        assert str(parent_of(UPath(url))) == str(UPath(url).parent), url
    assert parent_of(Path("store/job=a/pack/rank=0")) == Path("store/job=a/pack")


def test_a_place_in_a_pack_is_named_by_rank_and_answers_as_its_path(tmp_path):
    """A place knows its text, name and pack without making a path; a process it is sent to
    gets the same place; anything else asked of it is asked of the path it names."""
    pack = tmp_path / "job=j" / "pack"
    pack.mkdir(parents=True)
    place = layout.PackPlace(pack, f"{pack}/", "rank=7")
    assert (str(place), place.name, place.parent) == (f"{pack}/rank=7", "rank=7", pack)
    assert layout.is_packed(place) and layout.pack_of(place) == str(pack)
    assert not layout.is_packed(pack / "rank=7") and layout.pack_of(pack / "rank=7") is None
    again = pickle.loads(pickle.dumps(place))
    assert again == place and hash(again) == hash(place) and layout.is_packed(again)
    assert place == pack / "rank=7"  # the path it names
    assert place / "summary.json" == pack / "rank=7" / "summary.json"
    assert not place.exists()  # not a folder: asked of the path
    assert layout.parent_of(place) is pack and layout.job_of(place) == tmp_path / "job=j"
