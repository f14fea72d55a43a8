"""`traceview export`: a timeline Perfetto opens, whose added tracks add up to the metrics."""

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from tests.cli.run_cli import traceview

RUN = Path(__file__).parents[2] / "sample_traces" / "cpu_sweep" / "zero2-dp2"


@pytest.mark.cli
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


@pytest.mark.cli
def test_export_without_output_writes_the_timeline_to_stdout(tmp_path):
    out = tmp_path / "timeline.json"
    assert traceview("export", RUN, "--output", out).code == 0
    result = traceview("export", RUN)
    assert result.code == 0, result.err
    assert json.loads(result.out) == json.loads(out.read_text())  # the same document, plain


@pytest.mark.cli
def test_steps_and_ranks_write_that_part_of_the_timeline(tmp_path):
    out = tmp_path / "part.json"
    result = traceview("export", RUN, "--steps", "3", "--ranks", "1", "--output", out)
    assert result.code == 0, result.err
    doc = json.loads(out.read_text())
    assert doc["traceview"]["steps"] == "3" and doc["traceview"]["ranks"] == "1"
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert {e["pid"] for e in doc["traceEvents"]} == {1}
    assert {e["args"]["step"] for e in spans if e["cat"] not in ("traceview",)} == {3}
    whole = json.loads(traceview("export", RUN).out)["traceEvents"]
    work = [e for e in spans if e["cat"] != "traceview"]
    assert len(work) == len(
        [e for e in whole if e["ph"] == "X" and e["pid"] == 1 and e["cat"] != "traceview"
         and e["args"].get("step") == 3]
    )  # fmt: skip
    # Its overlap and exposed tracks are rank 1's in step 3, as analyze measures them.
    analysis = json.loads(traceview("analyze", RUN, "--format", "json").out)
    (step,) = [s for r in analysis["ranks"] if r["rank"] == 1 for s in r["steps"] if s["step"] == 3]
    for track, key in (("overlap", "overlap_us"), ("exposed comm", "exposed_comm_us")):
        drawn = sum(e["dur"] for e in spans if e["cat"] == "traceview" and e["name"] == track)
        assert drawn == pytest.approx(step[key], abs=1e-3)


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--ranks", "5"], "no rank 5 in "),
        (["--ranks", "0,7-9"], "no ranks 7-9 in "),
        (["--steps", "99"], "no step 99 in "),
    ],
)
@pytest.mark.cli
def test_a_part_the_run_lacks_is_refused_naming_what_it_has(option, said):
    result = traceview("export", RUN, *option)
    assert result.code == 2 and result.out == ""
    assert said in result.err and result.err.count("\n") == 1
