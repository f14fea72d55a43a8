"""The harness as a job of two hosts (tests/harness/hosts.py: namespaces of this machine, each
with its own address, name and disk), launched as on a cluster — one torchrun per node meeting
at a c10d rendezvous, Gloo between the hosts' addresses — and read back by traceview."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import traceview
from tests.cli.run_cli import traceview as cli
from tests.harness.conftest import SMALL
from tests.harness.hosts import hosts_or_skip, start, stop

pytestmark = pytest.mark.torchrun  # its hosts and their processes, for every test

pytest.importorskip("torch")


def launch(node: str, rendezvous: str, out: Path, store: Path) -> list[str]:
    return [
        sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc_per_node=1",
        "--rdzv-backend=c10d", f"--rdzv-endpoint={rendezvous}:29400", "--rdzv-id=two-hosts",
        "-m", "instrumented_train", "--strategy", "ddp", "--preset", "tiny", "--device", "cpu",
        *SMALL, "--out", str(out), "--store", str(store),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def two_host_job(tmp_path_factory):
    """One DDP job of two ranks, one per host: each writes its trace to its own disk's
    `job` folder (the same path on both), and into a store both hosts see."""
    root = tmp_path_factory.mktemp("hosts")
    local = root / "local"  # each host's own disk is bound here
    store = root / "store"
    with hosts_or_skip(root, 2, local) as hosts:
        logs = [root / f"{h.name}.log" for h in hosts]
        started = [
            start(h, root, local, launch(h.name, hosts[0].name, local / "job", store), log,
                  env={"GLOO_SOCKET_IFNAME": "eth0", "OMP_NUM_THREADS": "1"})
            for h, log in zip(hosts, logs, strict=True)
        ]  # fmt: skip
        try:
            codes = [p.wait(timeout=420) for p in started]
        finally:
            stop(started)
        said = "\n".join(f"== {log.name}\n{log.read_text()[-3000:]}" for log in logs)
        assert codes == [0, 0], said
        yield [h.disk / "job" for h in hosts], store


def test_each_host_writes_its_rank_and_rank_0_the_run_record(two_host_job):
    (first, second), _ = two_host_job
    assert sorted(p.name for p in first.iterdir()) == ["rank0.pt.trace.json.gz", "run.json"]
    assert sorted(p.name for p in second.iterdir()) == ["rank1.pt.trace.json.gz"]
    record = json.loads((first / "run.json").read_text())
    assert record["hosts"] == ["host0", "host1"]
    assert [(r["rank"], r["host"]) for r in record["ranks"]] == [(0, "host0"), (1, "host1")]
    assert record["run_id"].startswith("two-hosts/")


@pytest.mark.torchrun
def test_each_host_s_folder_named_together_is_the_job(two_host_job):
    (first, second), _ = two_host_job
    (job,) = traceview.load_runs([first, second]).jobs
    assert job.folder == first and [r.rank for r in job.ranks] == [0, 1]
    assert [job.report.host_of(r) for r in job.ranks] == ["host0", "host1"]
    assert any(n.message.startswith("gathered from 2 folders of one launch (two-hosts/")
               for n in job.ranks[1].notes)  # fmt: skip
    # Two hosts, two clocks: the offset is fitted to the matched collectives, not assumed.
    assert not job.report.shared_clock and job.report.aligned
    assert job.run is not None and job.run.world_size == 2
    doc = json.loads(cli("ranks", first, second, "--format", "json").out)
    (ranks,) = doc["jobs"]
    assert [(a["rank"], a["host"]) for a in ranks["per_rank"]] == [(0, "host0"), (1, "host1")]
    compared = json.loads(cli("compare", first, second, "--format", "json").out)
    assert [(r["strategy"], r["dp"]) for r in compared["runs"]] == [("ddp", 2)]


def test_the_store_both_hosts_wrote_holds_the_whole_job(two_host_job):
    _, store = two_host_job
    job = traceview.load(store)
    assert [r.rank for r in job.ranks] == [0, 1] and job.report.aligned
    assert job.run is not None and job.run.hosts == ["host0", "host1"]
    assert [job.report.host_of(r) for r in job.ranks] == ["host0", "host1"]


@pytest.mark.torchrun
def test_one_host_s_folder_alone_is_rank_0_and_says_the_others_are_elsewhere(two_host_job):
    (first, _), _ = two_host_job
    job = traceview.load(first)
    assert [r.rank for r in job.ranks] == [0] and job.run is not None
    (caveat,) = [n for n in job.ranks[0].notes if n.caveat]
    assert caveat.message.startswith("the run record names 2 ranks, and rank 1 (host1) is "
                                     "not among these traces")  # fmt: skip
    table = cli("analyze", first)
    assert "rank 1 (host1) is not among these traces" in table.out + table.err


def test_the_slurm_example_launches_as_the_two_host_test_does():
    import shlex

    from instrumented_train.flags import parse_config

    text = (Path(__file__).parents[2] / "scripts" / "slurm_example.sbatch").read_text()
    command = shlex.split(text[text.index("srun torchrun") :].replace("\\\n", " "))
    # The flags the two-host job above is launched with, one torchrun per node.
    flags = [part.split("=")[0] for part in command if part.startswith("--")]
    for needed in (
        "--nnodes",
        "--nproc_per_node",
        "--rdzv-id",
        "--rdzv-backend",
        "--rdzv-endpoint",
    ):
        assert needed in flags
    assert "--rdzv-backend=c10d" in command
    harness = command[command.index("instrumented_train") + 1 :]
    config = parse_config([a.replace('"', "") for a in harness])  # the harness accepts them
    assert config.strategy == "zero3"
