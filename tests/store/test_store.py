"""The trace store: `traceview ingest` into Parquet, then every command on the store gives the
numbers it gives on the traces (the committed CPU sweep and the real NCCL traces); incremental
ingestion; the layout hive readers (polars, DuckDB) see; the errors."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from tests.cli.run_cli import traceview

ROOT = Path(__file__).parents[2]
SWEEP = ROOT / "sample_traces" / "cpu_sweep"
FIXTURES = ROOT / "tests" / "fixtures" / "traces"
NCCL_PAIR = FIXTURES / "nccl_sampled_w128"
LONE = sorted(FIXTURES.glob("*.json.gz"))


def _json(*args: str | Path) -> dict:
    done = traceview(*args, "--format", "json")
    assert done.code == 0, done.err
    return json.loads(done.out)


def _paths_out(doc: object) -> object:
    """The document without where its runs were read from (a folder, or the store)."""
    if isinstance(doc, dict):
        return {k: _paths_out(v) for k, v in doc.items() if k not in ("folder", "job")}
    if isinstance(doc, list):
        return [_paths_out(v) for v in doc]
    return doc


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("store") / "S"
    done = traceview("ingest", SWEEP, "--store", where)
    assert done.code == 0, done.err
    assert "12 jobs; 28 rank partitions written, 0 unchanged, 0 failed" in done.out
    return where


@pytest.mark.cli
@pytest.mark.parametrize("command", ["analyze", "collectives", "ranks"])
def test_a_job_in_the_store_gives_the_numbers_of_its_traces(store, command):
    from_store = _json(command, store, "--job", "ddp-dp2")
    from_traces = _json(command, SWEEP / "ddp-dp2")
    assert _paths_out(from_store) == _paths_out(from_traces)


@pytest.mark.cli
def test_compare_on_the_store_is_compare_on_the_sweep(store):
    assert _paths_out(_json("compare", store)) == _paths_out(_json("compare", SWEEP))


@pytest.mark.cli
def test_a_job_folder_of_the_store_is_a_run(store):
    direct = _json("analyze", store / "job=zero3-dp4")
    assert _paths_out(direct) == _paths_out(_json("analyze", SWEEP / "zero3-dp4"))


@pytest.mark.cli
def test_export_and_report_read_the_store(store, tmp_path):
    a, b = tmp_path / "store.json", tmp_path / "traces.json"
    assert traceview("export", store, "--job", "ddp-dp4", "-o", a).code == 0
    assert traceview("export", SWEEP / "ddp-dp4", "-o", b).code == 0
    exported = [json.loads(p.read_text()) for p in (a, b)]
    assert [e["traceview"].pop("source") for e in exported] == [
        str(store / "job=ddp-dp4"),
        str(SWEEP / "ddp-dp4"),
    ]
    assert exported[0] == exported[1]
    report = tmp_path / "report.html"
    done = traceview("report", store, "-o", report)
    assert done.code == 0, done.err
    assert "zero3" in report.read_text()


@pytest.mark.cli
def test_real_nccl_traces_give_the_same_numbers_from_the_store(tmp_path):
    store = tmp_path / "S"
    done = traceview("ingest", NCCL_PAIR, *LONE, "--store", store)
    assert done.code == 0, done.err
    jobs = sorted(p.name for p in store.glob("job=*"))
    assert len(jobs) == 1 + len(LONE)  # the pair, and each lone trace its own job
    for command in ("collectives", "ranks"):
        assert _paths_out(_json(command, store, "--job", "nccl_sampled_w128")) == _paths_out(
            _json(command, NCCL_PAIR)
        )
    by_trace = {r["trace"]: r for r in _json("analyze", store)["ranks"]}
    read = [r for path in [*LONE, NCCL_PAIR] for r in _json("analyze", path)["ranks"]]
    assert len(read) == len(by_trace)
    for expected in read:  # the pair's with its caveat (world size 128: 2 ranks read)
        stored = by_trace[expected["trace"]]
        assert stored.pop("job").startswith(str(store / "job="))  # the store's job, by name
        assert stored == {k: v for k, v in expected.items() if k != "job"}


@pytest.mark.cli
def test_unchanged_traces_are_not_parsed_again_and_a_changed_one_replaces_its_partition(tmp_path):
    run = tmp_path / "ddp-dp2"
    shutil.copytree(SWEEP / "ddp-dp2", run)
    store = tmp_path / "S"
    assert (
        "2 rank partitions written, 0 unchanged" in traceview("ingest", run, "--store", store).out
    )
    again = traceview("ingest", run, "--store", store)
    assert "0 rank partitions written, 2 unchanged" in again.out
    # Rank 1's trace changes: its kernels run a step later (a different trace, same size class).
    trace = run / "rank1.pt.trace.json.gz"
    doc = json.loads(gzip.decompress(trace.read_bytes()))
    doc["traceEvents"] = [
        e for e in doc["traceEvents"] if "ProfilerStep#3" not in e.get("name", "")
    ]
    trace.write_bytes(gzip.compress(json.dumps(doc).encode()))
    changed = traceview("ingest", run, "--store", store)
    assert "1 rank partition written, 1 unchanged" in changed.out, changed.out
    assert _paths_out(_json("analyze", store)) == _paths_out(_json("analyze", run))
    leftovers = [p.name for p in store.rglob("*") if p.name.startswith(".")]
    assert leftovers == [".writer.lock"]  # kept: removing a lock file would race its next user


@pytest.mark.cli
def test_the_layout_is_hive_partitioned_parquet(store):
    steps = pl.scan_parquet(store / "job=*" / "rank=*" / "steps.parquet", hive_partitioning=True)
    table = steps.filter(pl.col("job") == "ddp-dp4").collect()
    assert sorted(table["rank"].unique().to_list()) == [0, 1, 2, 3]
    analyzed = _json("analyze", SWEEP / "ddp-dp4")["ranks"]
    expected = {
        (r["rank"], s["step"]): round(s["exposed_comm_us"] * 1000)
        for r in analyzed
        for s in r["steps"]
    }
    got = {(r, s): e for r, s, e in table.select("rank", "step", "exposed_comm_ns").rows()}
    assert got == expected
    marker = json.loads((store / "store.json").read_text())
    assert marker == {"store_version": 5}
    assert (store / "job=ddp-dp4" / "run.json").read_bytes() == (
        SWEEP / "ddp-dp4" / "run.json"
    ).read_bytes()


@pytest.mark.cli
def test_the_documented_duckdb_query_runs_on_the_store(store):
    duckdb = pytest.importorskip("duckdb")
    page = (ROOT / "docs" / "store.md").read_text()
    (sql,) = re.findall(r"```sql\n(.*?)```", page, re.S)
    rows = duckdb.sql(sql.replace("store/", f"{store}/")).fetchall()
    analyzed = {
        (job, r["rank"], s["step"]): round(s["exposed_comm_us"] * 1000)
        for job in ("ddp-dp2", "zero3-dp4")
        for r in _json("analyze", SWEEP / job)["ranks"]
        for s in r["steps"]
    }
    got = {
        (job, rank, step): round(ms * 1e6)
        for job, rank, step, ms, _pct in rows
        if job in ("ddp-dp2", "zero3-dp4")
    }
    assert got.keys() == analyzed.keys()
    for key, ns in analyzed.items():
        assert abs(got[key] - ns) <= 5_000, key  # the query rounds to 0.01 ms


@pytest.mark.ray
def test_ingest_through_a_real_local_ray_runtime(store, tmp_path):
    pytest.importorskip("ray")
    with_ray = tmp_path / "S"
    env_before = dict(os.environ)
    done = traceview(
        "ingest", SWEEP / "zero2-dp4", SWEEP / "ddp-dp2", "--store", with_ray, "--engine", "ray"
    )
    assert done.code == 0, done.err
    assert "2 jobs; 6 rank partitions written" in done.out
    # What starting Ray cost is said before any trace is parsed.
    assert re.search(r"engine: Ray started here in \d+\.\d s \(\d+ CPUs\)", done.err), done.err
    assert dict(os.environ) == env_before
    for job in ("zero2-dp4", "ddp-dp2"):
        assert _paths_out(_json("collectives", with_ray, "--job", job)) == _paths_out(
            _json("collectives", store, "--job", job)
        )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("analyze", "{store}", "--job", "nope"), "no job named 'nope'"),
        (("analyze", "{store}", "--comm-pattern", "Memcpy"), "ingest again with the pattern"),
        (("ingest", "{store}", "--store", "{tmp}/T"), "already in a store"),
        (("ingest", SWEEP, "--store", ROOT / "traceview"), "not a traceview store"),
        (("ingest", SWEEP, "--store", "{tmp}/U", "--job", "one"), "--job names one run"),
        (("ingest", SWEEP / "ddp-dp2", "--store", "{tmp}/U", "--job", "a/b"), "job name 'a/b'"),
    ],
)
@pytest.mark.cli
def test_bad_requests_get_one_line(store, tmp_path, args, fragment):
    done = traceview(*(str(a).format(store=store, tmp=tmp_path) for a in args))
    assert done.code == 2
    assert done.err.count("\n") == 1 and fragment in done.err, done.err
    assert "Traceback" not in done.err


@pytest.mark.cli
def test_a_newer_store_is_refused(tmp_path):
    store = tmp_path / "S"
    assert traceview("ingest", SWEEP / "ddp-dp1", "--store", store).code == 0
    (store / "store.json").write_text('{"store_version": 99}')
    done = traceview("analyze", store)
    assert done.code == 2 and "store_version 99 is newer" in done.err


@pytest.mark.cli
def test_a_partition_an_older_traceview_wrote_is_made_again(tmp_path):
    store = tmp_path / "S"
    assert traceview("ingest", SWEEP / "ddp-dp1", "--store", store).code == 0
    summary = store / "job=ddp-dp1" / "rank=0" / "summary.json"
    older = json.loads(summary.read_text()) | {"store_version": 1}
    summary.write_text(json.dumps(older))
    (store / "store.json").write_text('{"store_version": 1}')
    record = store / "job=ddp-dp1" / "job.json"  # an older one kept no summary hashes
    record.write_text(json.dumps(json.loads(record.read_text()) | {"summaries": {}}))
    done = traceview("analyze", store)
    assert done.code == 2 and "written by an older traceview (store_version 1" in done.err
    assert "ingest again" in done.err and done.err.count("\n") == 1
    again = traceview("ingest", SWEEP / "ddp-dp1", "--store", store)
    assert "1 rank partition written, 0 unchanged" in again.out, again.out
    assert json.loads((store / "store.json").read_text()) == {"store_version": 5}
    assert _paths_out(_json("analyze", store)) == _paths_out(_json("analyze", SWEEP / "ddp-dp1"))


@pytest.mark.torchrun
def test_the_harness_stores_each_rank_as_it_writes_it(tmp_path):
    pytest.importorskip("torch")
    from tests.harness.test_folders import torchrun

    out, store = tmp_path / "runs" / "ddp-w2", tmp_path / "S"
    job = torchrun(out, "--store", str(store))
    log, _ = job.communicate(timeout=600)
    assert job.returncode == 0, log
    assert "stored in" in log and "as job ddp-w2" in log
    folder = store / "job=ddp-w2"
    assert sorted(p.name for p in folder.glob("rank=*")) == ["rank=0", "rank=1"]
    assert (folder / "run.json").read_bytes() == (out / "run.json").read_bytes()
    for command in ("analyze", "collectives", "ranks"):
        assert _paths_out(_json(command, store)) == _paths_out(_json(command, out))
    # The harness names its kept steps as traceview shows them.
    logged = {int(n) for n in re.findall(r"\[rank0\] step \d+ = ProfilerStep#(\d+) \(kept\)", log)}
    (rank0, _) = _json("analyze", out)["ranks"]
    assert logged == {s["step"] for s in rank0["steps"]} and logged
    # The traces were stored by the ranks themselves: ingesting the run folder parses none.
    assert (
        "0 rank partitions written, 2 unchanged" in traceview("ingest", out, "--store", store).out
    )


def test_the_python_api_ingests_and_loads_a_store(tmp_path):
    import traceview

    done = traceview.ingest([SWEEP / "zero3-dp2"], tmp_path / "S", job="z3")
    assert done.jobs == ("z3",) and len(done.written) == 2 and not done.failures
    stored = traceview.load(tmp_path / "S", job="z3")
    parsed = traceview.load(SWEEP / "zero3-dp2")
    assert [r.total for r in stored.ranks] == [r.total for r in parsed.ranks]
    assert [r.steps for r in stored.ranks] == [r.steps for r in parsed.ranks]
    assert stored.calls.equals(parsed.calls)
    assert stored.work.equals(parsed.work) and stored.work.height > 0
    assert stored.run == parsed.run and stored.strategy == "zero3"


def test_a_stored_jobs_intervals_are_read_when_first_asked_for(store):
    import traceview as api

    job = api.load(store, job="zero3-dp2")
    assert all(r.intervals is None for r in job.ranks)
    kept = api.load(store, job="zero3-dp2", keep_intervals=True).intervals
    assert kept.height > 0 and job.intervals.equals(kept)


@pytest.mark.cli
def test_a_job_whose_record_is_gone_says_so(tmp_path):
    # job.json deleted together with a rank's folder: what the job lacks cannot be told, and
    # reading it says so (was: exit 0, one rank read as the whole job).
    store = tmp_path / "S"
    assert traceview("ingest", SWEEP / "ddp-dp2", "--store", store).code == 0
    (store / "job=ddp-dp2" / "job.json").unlink()
    shutil.rmtree(store / "job=ddp-dp2" / "rank=1")
    read = traceview("analyze", store)
    assert read.code == 1, read.err
    assert (
        "its job record (job.json) is gone: which ranks the job held cannot be told; "
        "ingest the job again" in read.err
    )


@pytest.mark.cli
@pytest.mark.parametrize("table", ["steps", "calls", "work"])
def test_a_stored_table_changed_by_one_byte_is_named_not_read(tmp_path, table):
    # Each table's size and hash are recorded at ingest and checked on every read: one byte
    # changed is the file named as damaged (exit 2), never different numbers at exit 0. The
    # tables of many partitions are read together; the damaged one still names itself.
    store = tmp_path / "S"
    assert traceview("ingest", SWEEP / "ddp-dp2", SWEEP / "ddp-dp1", "--store", store).code == 0
    path = store / "job=ddp-dp2" / "rank=1" / f"{table}.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    command = (
        ("diff", store / "job=ddp-dp1", store / "job=ddp-dp2")
        if table == "work"
        else ("analyze", store)
    )
    done = traceview(*command, "--format", "json")
    assert done.code == 2, (done.code, done.err)
    assert f"{path}: damaged: not the bytes stored at ingest" in done.err
    assert "ingest its trace again" in done.err
