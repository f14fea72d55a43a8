"""Each lane of a rank named by what it does (the training thread, a Gloo worker, `stream 7
(NCCL)`): one naming for the dashboard's and the report's timelines and the Perfetto export's
threads."""

from __future__ import annotations

import polars as pl

_LIBRARIES = {
    "gloo": "Gloo",
    "nccl": "NCCL",
    "hccl": "HCCL",
    "mpi": "MPI",
    "ucc": "UCC",
    "xccl": "XCCL",
}


def lane_names(intervals: pl.DataFrame, backend: str | None) -> dict[str, str]:
    """Each lane of one rank named by what it does. CPU threads: the one with the most compute
    is the training thread; one with communication and no compute is the collective library's
    worker (numbered when there are several); any other keeps its id. GPU streams keep their
    number and say what runs on them: the collective library, compute, or copies. The library:
    as its calls name it ("gloo:all_reduce"), else the rank's backend."""
    work = intervals.group_by("lane", "lane_kind", maintain_order=True).agg(
        *(
            ((pl.col("end_ns") - pl.col("ts_ns")) * (pl.col("kind") == kind)).sum().alias(kind)
            for kind in ("compute", "comm", "memory")
        ),
        said=pl.col("name").cast(pl.String).filter(pl.col("kind") == "comm").first(),
    )
    names: dict[str, str] = {}
    threads = work.filter(pl.col("lane_kind") == "cpu_thread").sort("compute", "lane")
    training = threads.filter(pl.col("compute") > 0)["lane"].to_list()[-1:]
    workers = threads.filter((pl.col("compute") == 0) & (pl.col("comm") > 0))["lane"].to_list()
    for lane, said in threads.select("lane", "said").iter_rows():
        if lane in training:
            names[lane] = "training thread"
        elif lane in workers:
            number = f" {workers.index(lane) + 1}" if len(workers) > 1 else ""
            names[lane] = f"{_library(said, backend)} worker{number}"
        else:
            names[lane] = lane
    streams = work.filter(pl.col("lane_kind") == "gpu_stream")
    for lane, compute, comm, said in streams.select("lane", "compute", "comm", "said").iter_rows():
        does = _library(said, backend) if comm else "compute" if compute else "copies"
        names[lane] = f"{lane} ({does})"
    return names


def _library(call: str | None, backend: str | None) -> str:
    said = (call or "").partition(":")[0].lower()
    return _LIBRARIES.get(said) or _LIBRARIES.get((backend or "").lower(), "communication")
