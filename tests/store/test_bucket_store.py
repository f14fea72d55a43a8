"""A store in a bucket (traceview/store/bucket.py, docs/store.md "A store in a bucket"): ingest
into `s3://…` gives what the store on disk gives; a writer killed mid-commit leaves the job as
its last commit left it; writers at once take turns, and one that ran past its lease cannot
commit over another's. Against a real S3 endpoint on 127.0.0.1."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from tests.cli.run_cli import traceview
from tests.procs import wait_gone
from tests.s3_endpoint import BUCKET, Relay, keys
from tests.store.test_store import SWEEP

DP4 = SWEEP / "ddp-dp4"


def _json(env: dict[str, str], *args: object) -> dict:
    done = traceview(*args, "--format", "json", env=env)
    assert done.code == 0, done.err
    return json.loads(done.out)


def _located(doc: object, where: object, name: str) -> object:
    return json.loads(json.dumps(doc).replace(str(where), name))


def _same_as_local(env: dict[str, str], url: str, local: object, command: str = "analyze"):
    remote = _located(_json(env, command, url), f"{url}/job=ddp-dp4", "JOB")
    return _located(remote, local, "JOB") == _located(_json(env, command, local), local, "JOB")


def _packs(client, prefix: str) -> set[str]:
    """The pack folders of the store at `prefix`'s job."""
    return {k.split("/")[1] for k in keys(client, f"{prefix}/") if "/pack-" in k}


def _rewritten(run, rank: int) -> None:
    """The rank's trace written again: the same events, other bytes (so ingested again)."""
    path = run / f"rank{rank}.pt.trace.json.gz"
    path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes()) + b"\n"))


def _started(env: dict[str, str], *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "traceview", *map(str, args)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env},
    )  # fmt: skip


@pytest.mark.cli
def test_ingest_into_a_bucket_reads_as_the_store_on_disk(s3, tmp_path):
    env, client, _ = s3
    run = tmp_path / "ddp-dp4"
    shutil.copytree(DP4, run)
    url = f"s3://{BUCKET}/stores/one"
    done = traceview("ingest", run, "--store", url, env=env)
    assert done.code == 0, done.err
    assert done.out.startswith(f"{url}: 1 job; 4 rank partitions written")
    for command in ("analyze", "ranks", "collectives"):
        assert _same_as_local(env, url, run, command), command
    objects = keys(client, "stores/one/")
    packs = sorted(_packs(client, "stores/one"))
    assert len(packs) == 1  # the job whole, in one pack: a handful of objects
    assert [k for k in objects if "/pack-" not in k] == [
        "job=ddp-dp4/job.json", "job=ddp-dp4/run.json", "store.json",
    ]  # fmt: skip
    record = json.loads(client.get_object(Bucket=BUCKET, Key="stores/one/job=ddp-dp4/job.json")
                        ["Body"].read())  # fmt: skip
    assert record["pack"] == packs[0] and record["packed"] == ["0", "1", "2", "3"]
    again = traceview("ingest", run, "--store", url, env=env)
    assert "0 rank partitions written, 4 unchanged" in again.out, again.out
    assert keys(client, "stores/one/") == objects  # nothing written
    for _ in (1, 2):  # each commit a new pack; the one before kept for readers, no older
        _rewritten(run, 2)
        changed = traceview("ingest", run, "--store", url, env=env)
        assert "1 rank partition written, 3 unchanged" in changed.out, changed.out
        now = sorted(_packs(client, "stores/one"))
        assert len(now) == 2 and packs[-1] in now
        packs = [packs[-1], *(p for p in now if p != packs[-1])]
    assert _same_as_local(env, url, run)


@pytest.mark.cli
def test_two_shards_into_a_bucket_at_once_make_one_store(s3, tmp_path):
    env, _, _ = s3
    url = f"s3://{BUCKET}/stores/shards"
    started = [_started(env, "ingest", DP4, "--store", url, "--shard", f"{k}/2", "--jobs", "1")
               for k in (1, 2)]  # fmt: skip
    for proc in started:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert "2 rank partitions written" in out
    assert _same_as_local(env, url, DP4, "ranks")
    assert _same_as_local(env, url, DP4, "analyze")


def _commit_held(env: dict[str, str], run, url: str, prefix: str):
    """An ingest into `url` whose commit is held on the network as it writes the job's record
    (its pack already sent): (the process, the relay)."""
    endpoint = env["AWS_ENDPOINT_URL"]
    relay = Relay(endpoint, f"PUT /{BUCKET}/{prefix}/job=ddp-dp4/job.json")
    writer = _started({**env, **relay.env}, "ingest", run, "--store", url)
    assert relay.held.wait(120), writer.communicate()
    return writer, relay


@pytest.mark.cli
def test_a_writer_killed_mid_commit_leaves_the_job_as_it_was(s3, tmp_path):
    env, client, _ = s3
    run = tmp_path / "ddp-dp4"
    shutil.copytree(DP4, run)
    url, prefix = f"s3://{BUCKET}/stores/killed", "stores/killed"
    assert traceview("ingest", run, "--store", url, env=env).code == 0
    before = _json(env, "analyze", url)
    _rewritten(run, 1)
    writer, relay = _commit_held(env, run, url, prefix)
    try:
        assert _json(env, "analyze", url) == before  # readers read the last commit
        assert len(_packs(client, prefix)) == 2
        os.kill(writer.pid, signal.SIGKILL)
        writer.communicate()
    finally:
        relay.close()
    assert _json(env, "analyze", url) == before
    # The next writer waits for the dead one's lease to run out, then commits.
    done = traceview("ingest", run, "--store", url, env=env)
    assert done.code == 0, done.err
    assert f"pid {writer.pid} on" in done.err and "waiting" in done.err
    assert "1 rank partition written, 3 unchanged" in done.out
    assert _same_as_local(env, url, run)
    # Two packs: the one this commit made and the one before; the dead writer's is gone.
    assert len(_packs(client, prefix)) == 2
    assert ".writer.lease" not in keys(client, f"{prefix}/")


@pytest.mark.cli
def test_a_writer_that_ran_past_its_lease_cannot_commit_over_another(s3, tmp_path):
    """A writer stalled mid-commit (stopped) past its lease: the next takes the lease and
    commits; the stalled one, resumed, is refused and changes nothing."""
    env, client, _ = s3
    run = tmp_path / "ddp-dp4"
    shutil.copytree(DP4, run)
    url, prefix = f"s3://{BUCKET}/stores/stalled", "stores/stalled"
    assert traceview("ingest", run, "--store", url, env=env).code == 0
    _rewritten(run, 3)
    stalled, relay = _commit_held(env, run, url, prefix)
    try:
        os.kill(stalled.pid, signal.SIGSTOP)  # its lease is no longer renewed
        done = traceview("ingest", run, "--store", url, env=env)
        assert done.code == 0, done.err
        after = _json(env, "analyze", url)
        os.kill(stalled.pid, signal.SIGCONT)
        relay.release()
        _, err = stalled.communicate(timeout=120)
    finally:
        relay.close()
        if stalled.poll() is None:
            stalled.kill()
            assert not wait_gone([stalled.pid], 20)
    assert stalled.returncode == 2, err
    assert err.count("\n") == 1 and "changed nothing" in err, err
    assert _json(env, "analyze", url) == after
    assert len(_packs(client, prefix)) == 2


@pytest.mark.cli
def test_what_cannot_be_written_there_is_one_line_and_nothing_is_made(s3, tmp_path):
    env, client, _ = s3
    client.put_object(Bucket=BUCKET, Key="other/notes.txt", Body=b"not a store")
    for store, said in (
        ("s3://no-such-bucket/store", "no bucket 'no-such-bucket' at this endpoint"),
        (f"s3://{BUCKET}/other", "not a traceview store (holds notes.txt)"),
    ):
        done = traceview("ingest", DP4, "--store", store, cwd=tmp_path, env=env)
        assert done.code == 2 and done.err.count("\n") == 1, done.err
        assert said in done.err
    assert keys(client, "other/") == ["notes.txt"]
    assert list(tmp_path.iterdir()) == []
