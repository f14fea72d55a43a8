"""The one documented schema of the intervals table (see docs/architecture.md "Data model")."""

from __future__ import annotations

import polars as pl

KIND = pl.Enum(["compute", "comm", "memory", "other"])
LANE_KIND = pl.Enum(["gpu_stream", "cpu_thread"])

INTERVALS_SCHEMA: dict[str, pl.DataType] = {
    "rank": pl.Int32(),  # null when the trace does not say
    "device": pl.Int32(),  # GPU index; null on CPU lanes
    "lane": pl.String(),  # "stream 7" / "thread 2055"
    "lane_kind": LANE_KIND,
    "kind": KIND,
    "name": pl.Categorical(),
    "ts_ns": pl.Int64(),
    "end_ns": pl.Int64(),
    "launch_ns": pl.Int64(),  # CPU time of the launching runtime call (GPU work), else null
    "step": pl.Int64(),  # ProfilerStep#N; null outside every step
    "collective": pl.String(),  # logical collective of comm intervals (all_reduce, ...)
    "bytes": pl.Int64(),  # message size of comm intervals (nccl-tests convention), where known
    "elements": pl.Int64(),  # the same message in elements of its dtype, where known
    "group_size": pl.Int64(),  # ranks in the group the collective ran on, where known
    "pg": pl.String(),  # process group name, where recorded
    "seq": pl.Int64(),  # collective sequence number in its group, where recorded
    "module": pl.String(),  # comm: the FSDP module it gathers or reduces ("blocks.3", "root")
    "backward": pl.Boolean(),  # launched (GPU) or run (CPU) inside an autograd engine function
}
