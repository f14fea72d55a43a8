"""Every dashboard page under Streamlit's AppTest, on the committed sweep and on bad input."""

import gzip
import io
import json
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tests import tracebuild as tb

pytestmark = pytest.mark.dashboard  # every page, run by Streamlit's AppTest

ROOT = Path(__file__).parents[2]
PAGES = ROOT / "traceview" / "dashboard" / "views"
SWEEP = ROOT / "sample_traces"


def page(name: str, root: Path, monkeypatch, run: str | None = None) -> AppTest:
    monkeypatch.setenv("TRACEVIEW_DASHBOARD_ROOT", str(root))
    at = AppTest.from_file(str(PAGES / f"{name}.py"), default_timeout=180)
    if run is not None:
        at.session_state["run"] = run
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def box_lines(boxes: list, counted_as: str) -> list[str]:
    """The lines of a page's one box of this kind (none: []), its label counting them as
    `counted_as` says ('Caveats: {n} ', '{n} run')."""
    assert len(boxes) <= 1
    if not boxes:
        return []
    (text,) = [m.value for m in boxes[0].markdown]
    lines = [re.sub(r"\\(.)", r"\1", line).removeprefix("- ") for line in text.splitlines()]
    assert boxes[0].label.startswith(counted_as.format(n=len(lines)))
    return lines


def caveats(at: AppTest) -> list[str]:
    """The lines of the page's one caveat box (none: []); at most one box per page."""
    return box_lines([e for e in at.expander if e.label.startswith("Caveats: ")], "Caveats: {n} ")


def tables(at: AppTest, chart: int) -> list[pa.Table]:
    el = at.get("vega_lite_chart")[chart]
    return [pa.ipc.open_stream(io.BytesIO(d.data.data)).read_all() for d in el.proto.datasets]


def charts(at: AppTest) -> list[tuple[dict, int]]:
    """Each chart's Vega-Lite spec and how many data rows Streamlit sends with it."""
    out = []
    for el in at.get("vega_lite_chart"):
        rows = sum(
            pa.ipc.open_stream(io.BytesIO(d.data.data)).read_all().num_rows
            for d in el.proto.datasets
        )
        out.append((json.loads(el.proto.spec), rows))
    return out


def test_scaling_page_plots_every_strategy_with_predictions(monkeypatch):
    at = page("scaling", SWEEP, monkeypatch)
    specs = charts(at)
    assert len(specs) == 4 and all(rows for _, rows in specs)  # the last: the what-if curve
    measured, predicted = tables(at, 0)
    assert set(measured.column("strategy").to_pylist()) == {"ddp", "zero1", "zero2", "zero3"}
    assert set(predicted.column("dp").to_pylist()) == {8, 16, 32}  # 2, 4, 8 × the largest DP
    assert "strokeDash" in json.dumps(specs[0][0])  # the prediction layer is drawn dashed
    assert len(at.dataframe[0].value) == 12
    assert not at.error
    # The first page says what to change, with the runs named relative to the root.
    (folded,) = at.expander
    assert folded.label.startswith("Findings: ")
    said = "\n".join(m.value for m in at.markdown)
    assert "- **cpu_sweep/zero3-dp4** · " in said and "prefetch" in said
    # Each strategy's DP 4 beside its prediction from DP 2 and DP 1.
    assert "Predictions checked against measured runs" in [h.value for h in at.subheader]
    checked = [line for line in said.splitlines() if "predicted from DP 2 and DP 1" in line]
    assert [line.split(" DP 4")[0] for line in checked] == [
        "- ddp",
        "- zero1",
        "- zero2",
        "- zero3",
    ]


def noisy_copy(tmp_path: Path) -> Path:
    """ddp-dp1 and ddp-dp2 of the sweep, dp2's measured steps made to vary 6× (0.1 to 0.6 s)."""
    for name in ("ddp-dp1", "ddp-dp2"):
        shutil.copytree(SWEEP / "cpu_sweep" / name, tmp_path / name)
    record = json.loads((tmp_path / "ddp-dp2" / "run.json").read_text())
    record["step_seconds"] = [1.0, 0.1, 0.6, 0.1, 0.1, 0.2, 0.2]
    (tmp_path / "ddp-dp2" / "run.json").write_text(json.dumps(record))
    return tmp_path


def test_scaling_page_says_which_figures_are_noise(monkeypatch, tmp_path):
    at = page("scaling", noisy_copy(tmp_path), monkeypatch)
    assert not at.warning  # one folded box, not a warning per caveat
    (said,) = caveats(at)
    assert said.startswith("ddp-dp2: noisy: step times vary 6.0×")
    ringed = tables(at, 0)[1]
    assert ringed.column("caveats").to_pylist() == [said.removeprefix("ddp-dp2: ")]
    # The caveat is in the box, not again in a table column; the tables show "–" for what is
    # unknown, never None.
    for shown in at.dataframe:
        assert "caveats" not in shown.value.columns
        assert shown.value.isna().sum().sum() == 0 and "None" not in shown.value.to_string()


@pytest.mark.parametrize("name", ["timeline", "overlap", "buckets", "memory"])
def test_run_pages_show_data(monkeypatch, name):
    at = page(name, SWEEP, monkeypatch, run="cpu_sweep/ddp-dp2")
    specs = charts(at)
    assert specs and all(rows > 0 for _, rows in specs)
    assert not at.error and not at.warning and caveats(at) == []


def test_buckets_page_names_ddp_buckets(monkeypatch):
    at = page("buckets", SWEEP, monkeypatch, run="cpu_sweep/ddp-dp2")
    assert set(at.dataframe[0].value["bucket or module"]) == {"bucket 0", "bucket 1", "bucket 2"}


def test_memory_calculator(monkeypatch):
    at = page("memory", SWEEP, monkeypatch, run="cpu_sweep/zero3-dp4")
    # It starts from the chosen run: its Ψ, DP degree, precision and strategy.
    record = json.loads((SWEEP / "cpu_sweep" / "zero3-dp4" / "run.json").read_text())
    assert at.number_input[0].value == pytest.approx(record["num_params"] / 1e6)
    assert at.number_input[1].value == 4
    chosen = {box.label: box.value for box in at.selectbox}
    assert (chosen["precision"], chosen["strategy"]) == ("fp32", "zero3")
    at.number_input[0].set_value(1000.0)
    at.number_input[1].set_value(8)
    at.run()
    # ZeRO-3 shards all 16 bytes per parameter: 16 × 1e9 / 8 = 2 GB, in the page's unit (MB:
    # the run's own model states are a few MB).
    assert at.metric[0].value == "2,000.00 MB"
    assert "MB per rank" in at.table[0].value.columns


def test_runs_page_lists_the_sweep(monkeypatch):
    at = page("runs", SWEEP, monkeypatch)
    runs = at.dataframe[0].value
    assert len(runs) == 12 and set(runs["strategy"]) == {"ddp", "zero1", "zero2", "zero3"}


def test_a_folder_without_traces(monkeypatch, tmp_path):
    at = page("overlap", tmp_path, monkeypatch)
    assert "No traces under" in at.warning[0].value


def test_a_truncated_trace_is_said_in_the_page(monkeypatch, tmp_path):
    run = tmp_path / "cut"
    shutil.copytree(SWEEP / "cpu_sweep" / "ddp-dp2", run)
    data = gzip.decompress((run / "rank1.pt.trace.json.gz").read_bytes())
    (run / "rank1.pt.trace.json.gz").write_bytes(gzip.compress(data[: len(data) * 3 // 4]))
    at = page("overlap", tmp_path, monkeypatch, run="cut")
    assert any(line.startswith("rank 1: ") and "cut short" in line for line in caveats(at))
    assert charts(at)


def test_a_rank_that_could_not_be_read_is_said_beside_the_others(monkeypatch, tmp_path):
    # rank 1's trace is garbage: the page draws rank 0 and says, first, that rank 1 is missing.
    run = tmp_path / "half"
    shutil.copytree(SWEEP / "cpu_sweep" / "ddp-dp2", run)
    (run / "rank1.pt.trace.json.gz").write_bytes(gzip.compress(b"this is no trace"))
    at = page("overlap", tmp_path, monkeypatch, run="half")
    said = caveats(at)
    assert said[0].startswith("not read: ") and "rank1.pt.trace.json.gz" in said[0], said
    assert charts(at)


def test_a_broken_trace_is_a_message_not_a_traceback(monkeypatch, tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "rank0.json").write_text("{ not json")
    at = page("timeline", tmp_path, monkeypatch, run="bad")
    assert "not valid JSON" in at.error[0].value or "not JSON" in at.error[0].value


def test_a_run_without_communication(monkeypatch, tmp_path):
    (tmp_path / "solo").mkdir()
    events = [tb.step(1, 0, 100), tb.launch(1, 1), tb.kernel("gemm", 10, 50, 1)]
    tb.write(tmp_path / "solo" / "rank0.json", tb.document(events, rank=0, world=1))
    at = page("buckets", tmp_path, monkeypatch, run="solo")
    assert "No communication" in at.info[0].value


def test_paths_outside_the_root_are_refused(monkeypatch, tmp_path):
    from traceview.dashboard import data
    from traceview.errors import TraceviewError

    monkeypatch.setenv("TRACEVIEW_DASHBOARD_ROOT", str(tmp_path))
    monkeypatch.setattr("sys.argv", ["app.py"])
    with pytest.raises(TraceviewError, match="outside the folder"):
        data.inside_root(Path("../../etc"))
    assert data.inside_root(Path("a/../b")) == tmp_path / "b"


def test_a_missing_rank_is_said_in_the_page(monkeypatch, tmp_path):
    run = tmp_path / "three-of-four"
    shutil.copytree(SWEEP / "cpu_sweep" / "ddp-dp4", run)
    (run / "rank2.pt.trace.json.gz").unlink()
    at = page("overlap", tmp_path, monkeypatch, run="three-of-four")
    assert caveats(at)[0].startswith("run.json lists 4 ranks but traces of only 3 were read")
    assert charts(at)


def test_a_link_to_a_file_outside_the_root_is_not_read(monkeypatch, tmp_path):
    root, outside = tmp_path / "root", tmp_path / "elsewhere"
    (root / "run").mkdir(parents=True)
    outside.mkdir()
    secret = tb.write(outside / "rank0.json", tb.document(tb.gpu_example(), rank=0, world=1))
    (root / "run" / "rank0.json").symlink_to(secret)
    at = page("runs", root, monkeypatch)
    assert len(at.dataframe[0].value) == 0
    at = page("overlap", root, monkeypatch)
    assert "No traces under" in at.warning[0].value


def test_a_sweep_run_s_trace_linking_out_of_the_root_is_not_read(tmp_path):
    # A sweep's run whose trace is a link to a file outside the root: not read, and nothing of
    # its bytes comes back in any message.
    import traceview

    root, outside = tmp_path / "root", tmp_path / "elsewhere"
    (root / "sweep" / "ddp-dp1").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.json").write_text("TOPSECRET password=hunter2")
    (root / "sweep" / "ddp-dp1" / "rank0.json").symlink_to(outside / "secret.json")
    index = {"command": [], "runs": [{"strategy": "ddp", "dp": 1, "path": "ddp-dp1",
                                      "status": "ok", "exit_code": 0}]}  # fmt: skip
    (root / "sweep" / "index.json").write_text(json.dumps(index))
    (listed,) = traceview.find_runs([root], within=root, empty_ok=True)
    assert listed.files == ()
    try:
        runs = traceview.load_runs([root], within=root)
        said = " ".join(f.message for f in runs.failures)
    except traceview.TraceviewError as e:
        said = e.message
    assert "TOPSECRET" not in said


def test_a_store_partition_linking_out_of_the_root_is_not_read(monkeypatch, tmp_path):
    import traceview

    root, outside = tmp_path / "root", tmp_path / "elsewhere"
    traceview.ingest([SWEEP / "cpu_sweep" / "ddp-dp2"], root / "S")
    outside.mkdir()
    partition = root / "S" / "job=ddp-dp2" / "rank=1"
    shutil.move(partition, outside / "rank=1")
    partition.symlink_to(outside / "rank=1")
    at = page("overlap", root, monkeypatch, run="S/job=ddp-dp2")
    said = caveats(at)
    assert any("1 of 2 ranks in the store: rank 1 missing" in w for w in said), said
    assert charts(at)


def test_one_bad_run_is_a_message_for_that_run_only(monkeypatch, tmp_path):
    shutil.copytree(SWEEP / "cpu_sweep" / "ddp-dp1", tmp_path / "ddp-dp1")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "rank0.json").write_text('{"traceEvents": [{"ph": "X", "ts": NaN}]}')
    at = page("scaling", tmp_path, monkeypatch)
    assert not at.error  # said once, in the sidebar's box of runs that failed
    (said,) = failed(at)
    assert said.startswith("bad: ") and "\n" not in said
    assert len(at.dataframe[0].value) == 1  # the good run, still shown


def failed(at: AppTest) -> list[str]:
    """The lines of the sidebar's one box of runs that could not be read (none: [])."""
    return box_lines([e for e in at.sidebar.expander if e.label.endswith(" could not be read")],
                     "{n} run")  # fmt: skip


def test_the_pages_open_on_the_best_run_that_loads(monkeypatch, tmp_path):
    # A broken run with more traces than the good one: the pages open on the good one, and
    # the broken one is said once, in the sidebar, with why.
    shutil.copytree(SWEEP / "cpu_sweep" / "ddp-dp2", tmp_path / "good")
    (tmp_path / "bad").mkdir()
    for rank in range(4):
        (tmp_path / "bad" / f"rank{rank}.json").write_text("{ not json")
    for name in ("timeline", "overlap"):
        at = page(name, tmp_path, monkeypatch)
        assert next(box.value for box in at.selectbox if box.label == "run") == "good"
        assert charts(at) and not at.error
        (said,) = failed(at)
        assert said.startswith("bad: ") and "JSON" in said
    # Chosen on purpose, the broken run is its error, in the page.
    at = page("timeline", tmp_path, monkeypatch, run="bad")
    assert at.error[0].value.startswith("bad: ")


def test_a_bug_is_a_message_not_a_traceback(monkeypatch, tmp_path):
    shutil.copytree(SWEEP / "cpu_sweep" / "ddp-dp1", tmp_path / "ddp-dp1")

    def broken(*args, **kwargs):
        raise RuntimeError("something impossible")

    monkeypatch.setattr("traceview.loader.parallel.build_timelines", broken)
    at = page("overlap", tmp_path, monkeypatch, run="ddp-dp1")
    (error,) = at.error
    assert error.value.startswith("ddp-dp1: ") and error.value.endswith(
        "rank0.pt.trace.json.gz: internal error: RuntimeError: something impossible "
        "(a bug in traceview)"
    )


@pytest.mark.cli
def test_the_pages_read_a_trace_store(monkeypatch, tmp_path):
    from tests.cli.run_cli import traceview

    store = tmp_path / "S"
    assert traceview("ingest", SWEEP / "cpu_sweep", "--store", store).code == 0
    runs = page("runs", store, monkeypatch).dataframe[0].value
    assert len(runs) == 12 and "ddp-dp2" in set(runs["run"])  # by its name, not its folder
    for name in ("timeline", "buckets"):
        at = page(name, store, monkeypatch, run="ddp-dp2")
        assert all(rows > 0 for _, rows in charts(at)) and not at.error
    on_traces = page("buckets", SWEEP, monkeypatch, run="cpu_sweep/ddp-dp2").dataframe[0].value
    on_store = page("buckets", store, monkeypatch, run="ddp-dp2").dataframe[0].value
    assert on_store.equals(on_traces)


def test_scaling_page_on_real_traces_without_run_records(monkeypatch, tmp_path):
    # Two real jobs, as a user keeps them: a folder each, traces and no run.json.
    real = ROOT / "tests" / "fixtures" / "traces"
    for job, trace in [("ddp_w2", "nccl_ddp_w2_rank0.json.gz"),
                       ("w8", "nccl_w8_rank3_step1010.json.gz")]:  # fmt: skip
        (tmp_path / job).mkdir()
        shutil.copy(real / trace, tmp_path / job / trace)
    at = page("scaling", tmp_path, monkeypatch)
    # What traces give is drawn (each run's median step, its exposed communication); what
    # needs a run record is said, once.
    drawn = [spec["title"] for spec, rows in charts(at) if rows]
    assert drawn == ["Median step", "Exposed communication"]
    assert any("need each run's samples per step" in c.value for c in at.caption)
    timed = at.dataframe[0].value
    assert list(timed["run"]) == ["ddp_w2", "w8"] and list(timed["E(N)"]) == ["–", "–"]
    assert not at.error and not at.warning


def test_scaling_page_says_what_a_trace_without_steps_lacks(monkeypatch, tmp_path):
    # A user's trace recorded without prof.step(): no chart to draw, and the page says why
    # and what gives one, above the tables of what the trace does give.
    (tmp_path / "job").mkdir()
    events = [tb.cpu_op("aten::mm", 1.0, 2.0)]
    tb.write(tmp_path / "job" / "trace.json", tb.document(events, rank=None))
    at = page("scaling", tmp_path, monkeypatch)
    assert not charts(at) and not at.error
    assert any(i.value.startswith("No run here has profiler steps") and "prof.step()" in i.value
               for i in at.info)  # fmt: skip
    assert len(at.dataframe[0].value) == 1


def test_every_page_opens_on_the_same_run(monkeypatch):
    # No choice made yet: the run with the most rank traces, on the runs page as on the others.
    chosen = {}
    for name in ("timeline", "overlap", "runs"):
        at = page(name, SWEEP, monkeypatch)
        chosen[name] = next(box.value for box in at.selectbox if box.label == "run")
    assert set(chosen.values()) == {"cpu_sweep/ddp-dp4"}


def test_the_timeline_of_many_ranks_draws_the_slowest_median_and_fastest(monkeypatch, tmp_path):
    # Six ranks of one job, rank r's step-1 kernel [80,130) stretched by (5 - r) × 20 µs past
    # the all-reduce's end (140): rank 0 the slowest, rank 5 the fastest, and of the windows in
    # order (ranks 5, 4, 3, 2, 1, 0) the middle one, rank 2.
    job = tmp_path / "job"
    job.mkdir()
    stretched = "void at::native::elementwise_kernel<128, 4>"
    for rank in range(6):
        events = [
            {**e, "dur": e["dur"] + 20 * (5 - rank)} if e.get("name") == stretched else e
            for e in tb.gpu_example(group=6)
        ]
        tb.write(job / f"rank{rank}.json", tb.document(events, rank=rank, world=6))
    at = page("timeline", tmp_path, monkeypatch, run="job")
    ranks = next(box for box in at.multiselect if box.label == "ranks drawn")
    assert ranks.value == [0, 2, 5]
    # The overview first: a cell per rank and step, each rank's own window; rank 0's the longest.
    (cells,) = tables(at, 0)
    assert cells.num_rows == 6 * len(set(cells.column("step").to_pylist()))
    longest = max(cells.to_pylist(), key=lambda c: c["value"])
    assert longest["rank"] == 0 and longest["first"] == 0 and longest["end"] == 1
    drawn = {row.split(" · ")[0] for row in tables(at, 1)[0].column("row").to_pylist()}
    assert drawn == {"rank 0", "rank 2", "rank 5"}  # only theirs read and sent
    assert any("the slowest, the median and the fastest" in c.value for c in at.caption)
    # The other pages draw the same three in full; their tables hold every rank.
    overlap = page("overlap", tmp_path, monkeypatch, run="job")
    bars = tables(overlap, 1)[0].column("rank").to_pylist()
    assert set(bars) == {0, 2, 5}
    buckets = page("buckets", tmp_path, monkeypatch, run="job")
    assert set(tables(buckets, 0)[0].column("rank").to_pylist()) == {0, 2, 5}


def test_the_overlap_page_says_who_the_ranks_waited_for(monkeypatch, tmp_path):
    from tests.analysis.test_stragglers import stepped

    stepped(tmp_path, [2] * 9 + [1])
    at = page("overlap", tmp_path, monkeypatch, run="job")
    assert at.subheader[0].value == "Who the ranks waited for"
    assert any(
        c.value.startswith("10 of 10 steps had a straggler; rank 2 in 9 of them, the same rank")
        for c in at.caption
    )
    (points,) = [t for i in range(len(at.get("vega_lite_chart"))) for t in tables(at, i)
                 if "caused_ms" in t.column_names]  # fmt: skip
    assert points.column("rank").to_pylist() == [2] * 9 + [1]


def test_the_overlap_page_says_where_the_ranks_collectives_do_not_line_up(monkeypatch, tmp_path):
    from tests.analysis.test_desync import everyone, job

    calls = {r: everyone() for r in (0, 1, 3)}
    calls[2] = everyone(s for s in range(1, 9) if s != 3)
    job(tmp_path, calls)
    at = page("overlap", tmp_path, monkeypatch, run="job")
    assert "Do the ranks' collectives line up?" in [h.value for h in at.subheader]
    assert any(c.value.startswith("31 calls of 1 group lined up by sequence numbers: 1 sign")
               for c in at.caption)  # fmt: skip
    assert any("rank 2 has no call at sequence number 3 of group 7" in m.value for m in at.markdown)


def test_the_what_if_panel_starts_from_the_run_and_moves_with_its_controls(monkeypatch, tmp_path):
    # The hand-made runs of tests/analysis/test_whatif.py: DP 2 at 100 µs a step; at DP 4 its
    # communication grows 1.5× to 52.5 µs, 30 of it hidden: 117.5 µs, E(N) 100 / 117.5.
    tb.run_folder(tmp_path, "dp1", steps=[9.0, 100e-6, 100e-6, 100e-6])
    tb.run_folder(tmp_path, "dp2", dp=2, steps=[9.0, 100e-6, 100e-6, 100e-6])
    at = page("scaling", tmp_path, monkeypatch)
    assert "What if" in [h.value for h in at.subheader]
    step, _, efficiency = at.metric[:3]
    assert (step.value, efficiency.value) == ("0.1 ms", "1.00")
    assert not step.proto.delta  # as measured: no change, no arrow, no colour
    at.select_slider(key="whatif dp dp2").set_value(4).run()
    assert not at.exception
    step, rate, efficiency = at.metric[:3]
    assert (step.value, efficiency.value) == ("0.1 ms", "0.85")
    assert rate.value == "136,170.2 samples/s"  # 4 ranks × 4 samples ÷ 117.5 µs
    at.slider(key="whatif hidden dp2").set_value(0.0).run()
    # Nothing hidden: 100 - 5 + 52.5 = 147.5 µs.
    assert at.metric[2].value == f"{100 / 147.5:.2f}"


def test_the_buckets_page_holds_the_calls_against_the_links_peak(monkeypatch, tmp_path):
    from tests.analysis.test_links import job

    job(tmp_path)
    at = page("buckets", tmp_path, monkeypatch, run="job")
    said = [m.value for m in at.markdown]
    assert any(
        s.startswith("Against the link's peak: NVLink 3, 300 GB/s per direction") for s in said
    )
    peak = at.dataframe[0].value
    assert list(peak["calls"]) == ["6"] and list(peak["% of the link's peak"]) == ["5.6"]


def test_the_diff_page_says_where_the_step_went(monkeypatch, tmp_path):
    from tests.analysis.test_diff import run

    run(tmp_path, "a", 200)
    run(tmp_path, "b", 400)
    at = page("diff", tmp_path, monkeypatch)
    assert not at.error
    shown = at.dataframe[0].value
    rows = dict(
        zip(shown.iloc[:, 0], zip(shown["B − A"], shown["judged"], strict=True), strict=True)
    )
    # tests/analysis/test_diff.py: the all-reduce from 200 to 400 µs, 0.1 → 0.3 ms exposed.
    assert rows["exposed communication"] == ("+0.200", "beyond noise")
    assert rows["compute"] == ("+0.000", "within noise")
    assert [h.value for h in at.subheader][:2] == ["Changed most on one rank", "Per collective"]
    ranked = at.dataframe[1].value  # one rank, alone: no waiting to compare
    assert ranked["rank"].tolist() == ["0", "0"]
    assert dict(zip(ranked.iloc[:, 1], ranked["B − A"], strict=True)) == {
        "compute": "+0.000", "exposed communication": "+0.200",
    }  # fmt: skip
    assert at.dataframe[2].value["exposed ms A → B"].tolist() == ["0.10 → 0.30"]


def test_the_diff_page_compares_one_run_s_two_halves(monkeypatch, tmp_path):
    from tests.analysis.test_diff import run

    # Steps 1-2 with a 200 µs all-reduce, 3-4 with 400 (tests/analysis/test_diff.py).
    run(tmp_path, "job", [200, 200, 400, 400])
    at = page("diff", tmp_path, monkeypatch)
    assert not at.error
    assert [t.value for t in at.text_input] == ["1-2", "3-4"]  # the run's halves, to start
    shown = at.dataframe[0].value
    rows = dict(zip(shown.iloc[:, 0], shown["B − A"], strict=True))
    assert rows["exposed communication"] == "+0.200"
    at.text_input[1].set_value("2-3").run()  # B: steps 2 (200 µs) and 3 (400): 0.2 ms exposed
    assert at.dataframe[0].value["B"].tolist()[2] == "0.200"
    at.text_input[1].set_value("3-x").run()
    assert "not a step list" in at.error[0].value


def test_the_overlap_page_draws_the_critical_path(monkeypatch, tmp_path):
    from tests.analysis.test_critical_path import late_backward

    late_backward(tmp_path / "job")
    at = page("overlap", tmp_path, monkeypatch, run="job")
    assert "What set each step's end: the critical path" in [h.value for h in at.subheader]
    # tests/analysis/test_critical_path.py: rank 1's compute 450 of the step's 600 µs.
    assert any(c.value.startswith("Over 1 step, the chain of work that set each step's end "
                                  "spent rank 1's compute 75 %, rank 0's transfer 17 %")
               for c in at.caption)  # fmt: skip
    (path,) = [t for i in range(len(at.get("vega_lite_chart"))) for t in tables(at, i)
               if "from_ms" in t.column_names]  # fmt: skip
    columns = [path.column(c).to_pylist() for c in ("rank", "category", "from_ms", "to_ms")]
    rows = zip(*columns, strict=True)
    assert [(r, c, round(a, 6), round(b, 6)) for r, c, a, b in rows] == [
        (1, "compute", 0, 0.45), (0, "transfer", 0.45, 0.55), (0, "compute", 0.55, 0.6)
    ]  # fmt: skip
