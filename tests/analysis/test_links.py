"""Bandwidth against the link's peak (docs/metrics.md "Against the link's peak"): hand-built
2-rank jobs on named GPUs and hosts, the shares worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import traceview
from tests import tracebuild as tb
from tests.cli.run_cli import traceview as cli
from traceview.analysis.links import link_of

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
MIB16 = 16 << 20


def job(tmp_path: Path, gpu: str | None = "NVIDIA A100-SXM4-80GB",
        hosts: tuple[str | None, str | None] = ("node-a", "node-a")) -> Path:  # fmt: skip
    """Two ranks, each running three 16 MiB all-reduces of 1,000 µs, arriving together (no wait),
    one a step: busbw = 16,777,216 bytes × 2(2-1)/2 ÷ 1 ms = 16.777 GB/s."""
    folder = tmp_path / "job"
    folder.mkdir(parents=True)
    for rank in (0, 1):
        events = []
        for s in range(3):
            base = 10_000 * s
            events += [
                tb.step(s + 1, base, 10_000), tb.launch(s + 1, base + 90),
                tb.kernel(ALLREDUCE, base + 100, 1000, corr=s + 1, stream=20,
                          **{"Collective name": "allreduce", "In msg nelems": MIB16 // 4,
                             "Out msg nelems": MIB16 // 4, "dtype": "Float", "Group size": 2,
                             "Process Group Name": "0", "Seq": s + 1}),
            ]  # fmt: skip
        extra = {"deviceProperties": [{"name": gpu}] if gpu else []}
        if hosts[rank] is not None:
            extra["host_name"] = hosts[rank]
        tb.write(folder / f"rank{rank}.json", tb.document(events, rank=rank, world=2, **extra))
    return folder


def test_large_messages_far_below_nvlink_are_a_finding(tmp_path):
    loaded = traceview.load(job(tmp_path))
    link, _ = loaded.report.link
    assert link is not None and (link.name, link.gbps, link.scope) == (
        "NVLink 3",
        300.0,
        "within a node",
    )
    assert link.basis.startswith("NVIDIA A100-SXM4-80GB (NVIDIA A100 SXM4 datasheet") and \
        link.basis.endswith("every trace from host node-a")  # fmt: skip
    (found,) = [f for f in loaded.findings if f.rule == "slow_link"]
    # 16.777 GB/s of 300: 5.6 %.
    assert found.numbers == {"collective": "all_reduce", "calls": 6, "busbw_gbps": 16.78,
                             "peak_gbps": 300.0, "peak_pct": 5.6}  # fmt: skip


@pytest.mark.cli
def test_a_given_link_speed_overrides_and_every_format_says_it(tmp_path):
    folder = job(tmp_path, hosts=("node-a", "node-b"))
    table = cli("collectives", folder)
    assert "against the link's peak: not known: the ranks ran on 2 hosts" in table.out
    given = cli("collectives", folder, "--link-gbps", "20")
    assert (
        "against the link's peak: given, 20 GB/s per direction, as given (--link-gbps 20)"
        in given.out
    )
    # 16.777 GB/s of 20: 83.9 %.
    assert "all_reduce  16,777,216      6                16.78      83.9%" in given.out
    doc = json.loads(cli("collectives", folder, "--link-gbps", "20", "--format", "json").out)
    (row,) = doc["jobs"][0]["against_peak"]
    assert (row["calls"], row["lower_bound"], round(row["peak_pct"], 1)) == (6, False, 83.9)
    assert round(doc["jobs"][0]["calls"][0]["link_peak_pct"], 1) == 83.9
    # Above a quarter of the peak: no finding.
    rules = [f.rule for f in traceview.load(folder, link_gbps=20.0).findings]
    assert "slow_link" not in rules


@pytest.mark.parametrize(
    "devices, hosts, why",
    [
        (
            set(),
            {"a"},
            "the traces list no GPU (CPU-only, or no deviceProperties): give --link-gbps",
        ),
        (
            {"Tesla T4"},
            {"a"},
            "Tesla T4: not in the table of GPU links (docs/metrics.md): give --link-gbps",
        ),
        (
            {"NVIDIA H100 80GB HBM3"},
            {None},
            "the traces do not say which host they ran on, so "
            "whether the collectives stayed within a node is unknown: give --link-gbps",
        ),
        (
            {"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"},
            {"a"},
            "the traces list different GPUs (NVIDIA A100-SXM4-80GB, NVIDIA H100 80GB HBM3)",
        ),
    ],
)
def test_what_it_cannot_decide_it_says(devices, hosts, why):
    assert link_of(devices, hosts, None) == (None, why)


def test_the_real_a100_traces_say_what_they_lack():
    # The 2-GPU DDP trace names its GPU (an A100 board not in the table) and no host.
    shared = Path(__file__).parents[1] / "fixtures" / "traces" / "nccl_ddp_w2_rank0.json.gz"
    link, why = traceview.load(shared).report.link
    assert link is None and "not in the table of GPU links" in why
