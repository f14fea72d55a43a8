"""`traceview export`: a timeline Perfetto opens, whose added tracks add up to the metrics."""

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from tests.cli.run_cli import traceview

RUN = Path(__file__).parents[2] / "sample_traces" / "cpu_sweep" / "zero2-dp2"


def test_exported_tracks_add_up_to_the_analysis(tmp_path):
    out = tmp_path / "timeline.json.gz"
    result = traceview("export", RUN, "--output", out)
    assert result.code == 0, result.err
    doc = json.loads(gzip.decompress(out.read_bytes()))  # plain Chrome trace JSON
    events = doc["traceEvents"]
    names = {
        (e["pid"], e["args"]["name"])
        for e in events
        if e["ph"] == "M" and e["name"] == "process_name"
    }
    assert names == {(0, "rank 0"), (1, "rank 1")}
    tracks = defaultdict(float)
    for e in events:
        if e.get("cat") == "traceview":
            tracks[(e["pid"], e["name"])] += e["dur"]
    analysis = json.loads(traceview("analyze", RUN, "--format", "json").out)
    for rank in analysis["ranks"]:
        r = rank["rank"]
        assert tracks[(r, "overlap")] == pytest.approx(rank["total"]["overlap_us"], abs=1e-3)
        assert tracks[(r, "exposed comm")] == pytest.approx(
            rank["total"]["exposed_comm_us"], abs=1e-3
        )
    comm = [e for e in events if e.get("cat") == "comm"]
    assert comm and all({"collective", "wait_ns", "transfer_ns"} <= set(e["args"]) for e in comm)
    assert min(e["ts"] for e in events if e["ph"] == "X") == 0


def test_export_without_output_writes_the_timeline_to_stdout(tmp_path):
    out = tmp_path / "timeline.json"
    assert traceview("export", RUN, "--output", out).code == 0
    result = traceview("export", RUN)
    assert result.code == 0, result.err
    assert json.loads(result.out) == json.loads(out.read_text())  # the same document, plain
