"""Which paths an ingest on a Ray cluster looks for on every node (a run lacking ranks here),
and which node ingests what (each distinct set of files once)."""

from __future__ import annotations

import shutil
from pathlib import Path

from traceview.loader.on_nodes import _assigned, lacks_ranks

SWEEP = Path(__file__).parents[2] / "sample_traces" / "cpu_sweep"


def test_each_distinct_listing_of_a_path_is_ingested_once():
    one, other = (("rank0.json", 10, 1),), (("rank1.json", 10, 2),)
    held = [{"p": one, "q": one}, {"p": one}, {"p": other}, {}]
    # p: nodes 0 and 1 see the same files (a shared file system), node 2 its own; q: node 0.
    assert _assigned(["p", "q"], held) == [["p", "q"], [], ["p"], []]


def test_a_run_lacks_ranks_its_record_or_its_world_size_names(tmp_path):
    assert not lacks_ranks(SWEEP / "ddp-dp2")
    assert not lacks_ranks(SWEEP / "ddp-dp2" / "rank0.pt.trace.json.gz")  # a trace on its own
    recorded = tmp_path / "recorded"
    recorded.mkdir()
    for name in ("rank0.pt.trace.json.gz", "run.json"):
        shutil.copy2(SWEEP / "ddp-dp2" / name, recorded)
    assert lacks_ranks(recorded)
    traces_alone = tmp_path / "alone"
    traces_alone.mkdir()
    shutil.copy2(SWEEP / "ddp-dp2" / "rank1.pt.trace.json.gz", traces_alone)
    assert lacks_ranks(traces_alone)  # world size 2, one trace
    assert not lacks_ranks(tmp_path / "nothing-here")
