"""Object storage as a path (traceview/remote.py, docs/store.md "Traces in object storage"):
traces, run folders, sweeps and stores in an S3 bucket read as the same local ones do. The
bucket is served by a real S3 endpoint on 127.0.0.1 (moto's standalone server), written with
boto3 as users' jobs write theirs, and read through the standard variables (AWS_ENDPOINT_URL
and the credentials)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import botocore.exceptions
import pytest

from tests.cli.run_cli import traceview
from tests.s3_endpoint import BUCKET, free_port, keys, upload
from tests.store.test_store import FIXTURES, SWEEP
from traceview.errors import TraceviewError
from traceview.loader.ingest import ingest, ingest_one
from traceview.remote import as_path, is_url, local_only, storage_error

DP4 = SWEEP / "ddp-dp4"  # four rank traces and a run record


def _json(env: dict[str, str], *args: str | Path) -> dict:
    done = traceview(*args, "--format", "json", env=env)
    assert done.code == 0, done.err
    return json.loads(done.out)


def _located(doc: object, where: str | Path, name: str) -> object:
    """The document with `where` (a folder or URL its runs were read from) said as `name`."""
    return json.loads(json.dumps(doc).replace(str(where), name))


@pytest.mark.cli
def test_a_job_in_a_bucket_gives_the_local_result(s3):
    env, client, _ = s3
    url = upload(client, DP4, "jobs/ddp-dp4")
    for command in ("analyze", "ranks", "collectives", "critical-path"):
        remote = _located(_json(env, command, url), url, "JOB")
        local = _located(_json(env, command, DP4), DP4, "JOB")
        assert remote == local, command
        assert "JOB" in json.dumps(remote)  # the paths were there to be said alike


@pytest.mark.cli
def test_a_sweep_and_lone_traces_in_a_bucket_give_the_local_result(s3):
    env, client, _ = s3
    url = upload(client, SWEEP, "sweeps/cpu")
    remote = _located(_json(env, "compare", url), url, "SWEEP")
    assert remote == _located(_json(env, "compare", SWEEP), SWEEP, "SWEEP")
    pair = FIXTURES / "nccl_sampled_w128"  # two ranks of 128: the caveat comes too
    url = upload(client, pair, "lone")
    remote = _located(
        _json(env, "analyze", f"{url}/rank0.json.gz", f"{url}/rank1.json.gz"), url, "D"
    )
    local = _located(_json(env, "analyze", *sorted(pair.iterdir())), pair, "D")
    assert remote == local


@pytest.mark.cli
def test_ingest_from_a_bucket_stores_the_job_and_sees_what_changed(s3, tmp_path):
    env, client, _ = s3
    url = upload(client, DP4, "ingest/ddp-dp4")
    store = tmp_path / "S"
    done = traceview("ingest", url, "--store", store, env=env)
    assert done.code == 0, done.err
    assert "4 rank partitions written" in done.out
    stored = _json(env, "analyze", store)
    traces = [f"{url}/rank{r}.pt.trace.json.gz" for r in range(4)]
    assert [r["trace"] for r in stored["ranks"]] == traces  # where each came from
    stored = _located(_located(stored, f"{store}/job=ddp-dp4", "JOB"), url, "JOB")
    assert stored == _located(_json(env, "analyze", url), url, "JOB")
    again = traceview("ingest", url, "--store", store, env=env)
    assert "0 rank partitions written, 4 unchanged" in again.out, again.out
    # One rank's trace written again (the same events, other bytes): ingested again alone.
    text = gzip.decompress((DP4 / "rank2.pt.trace.json.gz").read_bytes())
    body = gzip.compress(text + b"\n")
    client.put_object(Bucket=BUCKET, Key="ingest/ddp-dp4/rank2.pt.trace.json.gz", Body=body)
    changed = traceview("ingest", url, "--store", store, env=env)
    assert "1 rank partition written, 3 unchanged" in changed.out, changed.out


@pytest.mark.cli
def test_two_shards_read_from_a_bucket_at_once_make_one_store(s3, tmp_path):
    env, client, _ = s3
    url = upload(client, DP4, "shards/ddp-dp4")
    store = tmp_path / "S"
    started = []
    for k in (1, 2):  # as two tasks of a scheduler's array, each with the variables
        started.append(
            subprocess.Popen(
                [sys.executable, "-m", "traceview", "ingest", url, "--store", str(store),
                 "--shard", f"{k}/2", "--jobs", "1"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env={**os.environ, **env},
            )
        )  # fmt: skip
    for proc in started:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert "2 rank partitions written" in out
    stored = _located(_json(env, "ranks", store), f"{store}/job=ddp-dp4", "JOB")
    assert _located(stored, url, "JOB") == _located(_json(env, "ranks", DP4), DP4, "JOB")


@pytest.mark.cli
def test_a_store_copied_into_a_bucket_reads_as_on_disk(s3, tmp_path):
    env, client, _ = s3
    store = tmp_path / "S"
    assert traceview("ingest", DP4, "--store", store).code == 0
    loose = upload(client, store, "stores/S")  # a partition per rank
    assert traceview("pack", store).code == 0
    packed = upload(client, store, "stores/P")  # the job packed
    for url in (loose, packed):
        for command in ("analyze", "ranks"):
            remote = _located(_json(env, command, url), url, "STORE")
            assert remote == _located(_json(env, command, store), store, "STORE"), command
    # The copy of a partition per rank, packed in the bucket: read the same, a handful of files.
    assert traceview("pack", loose, env=env).code == 0
    assert not [k for k in keys(client, "stores/S/") if "/rank=" in k]
    remote = _located(_json(env, "analyze", loose), loose, "STORE")
    assert remote == _located(_json(env, "analyze", store), store, "STORE")


@pytest.mark.cli
def test_what_cannot_be_read_or_written_there_is_one_line_and_nothing_is_made(s3, tmp_path):
    env, _, _ = s3
    missing = traceview("analyze", f"s3://{BUCKET}/no/such/job", env=env)
    assert missing.code == 2 and missing.err.strip().endswith("no such file or folder")
    away = {**env, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"}
    unreachable = traceview("analyze", f"s3://{BUCKET}/jobs", env=away)
    assert unreachable.code == 2, unreachable.err
    assert unreachable.err.count("\n") == 1 and "Traceback" not in unreachable.err
    assert "could not be reached" in unreachable.err and "AWS_ENDPOINT_URL" in unreachable.err
    url = upload(s3[1], DP4, "refused/ddp-dp4")
    for args, said in (
        (("analyze", url, "--output", f"s3://{BUCKET}/out.txt"), "not in object storage"),
        (("ingest", DP4, "--store", "gs://b/store"), "in an S3 bucket"),
    ):
        done = traceview(*args, cwd=tmp_path, env=env)
        assert done.code == 2 and done.err.count("\n") == 1, done.err
        assert said in done.err
    assert list(tmp_path.iterdir()) == []  # no local folder named after the URL


def test_a_url_names_object_storage_and_each_protocol_its_library():
    assert is_url("s3://b/k") and is_url("gs://b") and not is_url("b/k") and not is_url("-")
    assert isinstance(as_path("b/k"), Path)
    assert str(as_path("s3://b/job/rank0.json")) == "s3://b/job/rank0.json"
    with pytest.raises(TraceviewError, match=r"pip install gcsfs"):
        as_path("gs://b/job")  # gcsfs is not installed: said before any read
    with pytest.raises(TraceviewError, match=r"not in object storage"):
        local_only("az://c/store", "a store is written on disk", "ingest there")
    local_only("store", "a store is written on disk", "ingest there")  # a local path is fine
    with pytest.raises(TraceviewError, match=r"profiler handler .* not in object storage"):
        ingest_one(DP4 / "rank0.pt.trace.json.gz", "s3://b/store", "job")
    with pytest.raises(TraceviewError, match=r"with the local engine, or with --shard"):
        ingest([DP4], "s3://b/store", engine="ray")
    refused = botocore.exceptions.EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
    said = storage_error(refused, "s3://b/k")
    assert said is not None and said.message.startswith("s3://b/k: object storage refused")
    assert storage_error(ValueError("a bug"), "s3://b/k") is None


@pytest.mark.cli
def test_a_trace_read_from_a_bucket_is_streamed_not_fetched_whole(s3, tmp_path):
    """A plain trace larger than the read-ahead block: read in ranged parts as it is parsed,
    with the same result (the server's log names each ranged read)."""
    env, client, log = s3
    trace = tmp_path / "rank0.json"
    body = json.loads(gzip.decompress((DP4 / "rank0.pt.trace.json.gz").read_bytes()))
    pad = [
        {"ph": "i", "name": "pad", "pid": 0, "tid": 0, "ts": 0, "s": "t", "args": {"x": "y" * 1000}}
    ]
    body["traceEvents"] = body["traceEvents"] + pad * 40_000  # ~41 MB: three 16 MB blocks
    trace.write_text(json.dumps(body))
    client.upload_file(str(trace), BUCKET, "big/rank0.json")
    remote = _located(
        _json(env, "analyze", f"s3://{BUCKET}/big/rank0.json"), f"s3://{BUCKET}/big", "D"
    )
    assert remote == _located(_json(env, "analyze", trace), tmp_path, "D")
    reads = [line for line in log.read_text().splitlines() if "GET /traces/big/rank0.json " in line]
    assert reads and all(line.endswith(" 206 -") for line in reads), (
        reads
    )  # each a part, none whole
    assert len(reads) >= 3
