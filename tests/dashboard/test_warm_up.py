"""The dashboard server's warm-up thread (traceview/dashboard/serve.py): it loads every run the
first page shows, and their findings, into the caches the pages read."""

import shutil
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
import traceview
from traceview.dashboard import data, serve

pytestmark = pytest.mark.dashboard

FIXTURES = Path(__file__).parents[1] / "fixtures" / "traces"


def test_the_warm_up_loads_each_run_and_its_findings_for_the_pages(tmp_path, monkeypatch):
    shutil.copytree(FIXTURES / "nccl_sampled_w128", tmp_path / "job")
    shutil.copytree(FIXTURES / "nccl_sampled_w128", tmp_path / "again")
    monkeypatch.setenv("TRACEVIEW_DASHBOARD_ROOT", str(tmp_path))
    loads: list[Path] = []
    load = traceview.load

    def counted(path, **kwargs):
        loads.append(path)
        return load(path, **kwargs)

    monkeypatch.setattr(traceview, "load", counted)
    serve.warm_up(str(tmp_path))
    assert sorted(p.name for p in loads) == ["again", "job"]
    for run in ("job", "again"):
        job = data.job_for(run)  # as a page asks for it: from the cache, not loaded again
        assert "findings" in job.__dict__  # measured already
    assert len(loads) == 2


def test_a_run_that_cannot_be_read_is_left_to_the_page(tmp_path, monkeypatch):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "rank0.json").write_text('{"traceEvents": [')
    monkeypatch.setenv("TRACEVIEW_DASHBOARD_ROOT", str(tmp_path))
    serve.warm_up(str(tmp_path))  # says nothing, raises nothing: the page says why
