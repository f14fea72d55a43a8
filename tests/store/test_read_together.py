"""A job's partitions are read together (one Parquet read for all its ranks' steps, one for
their calls): the same reports as reading each alone, and a damaged partition still fails alone,
saying which."""

from __future__ import annotations

import polars as pl
import pytest

import traceview as traceview_api
from tests.cli.run_cli import traceview
from tests.store.test_store import SWEEP
from traceview.loader.parallel import Options
from traceview.loader.stored import read_partitions
from traceview.store.partition import read_partition


def _partitions(tmp_path):
    store = tmp_path / "S"
    done = traceview("ingest", SWEEP / "ddp-dp4", "--store", store)
    assert done.code == 0, done.err
    return sorted((store / "job=ddp-dp4").glob("rank=*"))


@pytest.mark.cli
def test_a_stored_jobs_work_is_read_together_when_first_asked_for(tmp_path):
    folders = _partitions(tmp_path)
    job = traceview_api.load(folders[0].parents[1], job="ddp-dp4")
    assert all(r.work is None for r in job.ranks)
    alone = pl.concat([read_partition(folder).work for folder in folders])
    assert job.work.equals(alone) and sorted(job.work["rank"].unique()) == [0, 1, 2, 3]


@pytest.mark.cli
def test_read_together_is_read_alone(tmp_path):
    folders = _partitions(tmp_path)
    together = read_partitions(folders, Options())
    assert len(together) == len(folders) == 4
    for folder, report in zip(folders, together, strict=True):
        alone = read_partition(folder)
        assert report.rank == alone.rank == int(folder.name.removeprefix("rank="))
        assert report.calls.equals(alone.calls) and report.calls.height > 0
        assert report.calls["rank"].unique().to_list() == [report.rank]
        assert report.work is None  # what only a diff reads: read when it asks
        assert alone.work is not None and alone.work.height > 0
        assert alone.work["rank"].unique().to_list() == [report.rank]
        assert report.steps == alone.steps and len(report.steps) > 0
        assert report.total == alone.total


@pytest.mark.cli
@pytest.mark.parametrize("damage", ["cut", "other columns"])
def test_a_damaged_table_fails_its_rank_alone(tmp_path, damage):
    folders = _partitions(tmp_path)
    table = folders[2] / "calls.parquet"
    if damage == "cut":
        table.write_bytes(table.read_bytes()[:100])
    else:  # a readable table, not the one the store writes: the batch read cannot hold it
        import polars as pl

        pl.DataFrame({"x": [1]}).write_parquet(table)
    reports = read_partitions(folders, Options())
    failed = [r for r in reports if not hasattr(r, "calls")]
    assert len(failed) == 1 and str(table) in failed[0].message
    assert "internal error" not in failed[0].message
    assert [r.rank for r in reports if hasattr(r, "calls")] == [0, 1, 3]
