"""Every table traceview keeps, its columns declared once: the intervals of the data model, the
FSDP scopes, the collective calls of a rank's CPU threads, a rank's collective calls and the
job's, and a rank's steps as the store keeps them. Types are polars instances (never classes),
so a schema is used as it is."""

from __future__ import annotations

import polars as pl

KIND = pl.Enum(["compute", "comm", "memory", "other"])
LANE_KIND = pl.Enum(["gpu_stream", "cpu_thread"])

# Lanes of device work: a device's streams ("stream 7"), and the host thread an accelerator's
# runtime records its collectives on, as events of their own ("host thread 2055": Kineto's
# collective_comm, XPU's oneCCL). Each runs its work in the order it was issued, timed as the
# device (or its runtime) ran it.
STREAM_LANE, RECORDS_LANE = "stream ", "host thread "  # each followed by its number


def device_lane(lane: pl.Expr) -> pl.Expr:
    """Whether a lane (`lane`: its name) is one of device work (STREAM_LANE, RECORDS_LANE)."""
    return lane.str.starts_with(STREAM_LANE) | lane.str.starts_with(RECORDS_LANE)


# The data model: one row per interval of work on a lane (docs/architecture.md "Data model").
INTERVALS_SCHEMA: dict[str, pl.DataType] = {
    "rank": pl.Int32(),  # null when the trace does not say
    "device": pl.Int32(),  # GPU index; null on CPU lanes
    "lane": pl.String(),  # "stream 7" / "thread 2055" / "host thread 2055" (device_lane)
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

# Which trace of a batch modelled together a row of the model's tables comes from (model/batch.py).
PART_TYPE = pl.UInt32()

# CPU spans that give work its context (model/scopes.py): an FSDP module, the backward pass.
SCOPES_SCHEMA: dict[str, pl.DataType] = {
    "pid": pl.Int64(),
    "tid": pl.Int64(),
    "scope_start": pl.Int64(),
    "scope_end": pl.Int64(),
    "scope_name": pl.String(),
}

# The collective calls a rank's CPU threads made, with what they recorded of each (model/calls.py):
# what a collective's kernels or Gloo spans are matched to.
CPU_CALLS_SCHEMA: dict[str, pl.DataType] = {
    "pid": pl.Int64(),
    "tid": pl.Int64(),
    "call_start_ns": pl.Int64(),
    "call_end_ns": pl.Int64(),
    "call_collective": pl.String(),
    "call_in_bytes": pl.Int64(),
    "call_out_bytes": pl.Int64(),
    "call_elem_bytes": pl.Int64(),
    "call_group_size": pl.Int64(),
    "call_pg": pl.String(),
    "call_pg_desc": pl.String(),
    "call_seq": pl.Int64(),
}

# One rank's collective calls (analysis/calls.py; docs/commands/collectives.md).
CALLS_SCHEMA: dict[str, pl.DataType] = {
    "rank": pl.Int32(),
    "step": pl.Int64(),
    "index": pl.Int64(),
    "collective": pl.String(),
    "pg": pl.String(),
    "seq": pl.Int64(),
    "group_size": pl.Int64(),
    "module": pl.String(),
    "backward": pl.Boolean(),
    "lane": pl.String(),
    "ready_ns": pl.Int64(),
    "start_ns": pl.Int64(),
    "end_ns": pl.Int64(),
    "queue_ns": pl.Int64(),
    "dur_ns": pl.Int64(),
    "bytes": pl.Int64(),
    "elements": pl.Int64(),
    "algbw_gbps": pl.Float64(),
    "busbw_gbps": pl.Float64(),
    "exposed_ns": pl.Int64(),  # the call's time with no compute beside it
    # Its share of the rank's exposed communication: that time less what calls started before
    # it already cover, so concurrent calls count once and the shares sum to the union.
    "exposed_share_ns": pl.Int64(),
}

# One rank's time per profiler step and name of work (analysis/work.py): what a diff reads of
# the kernels (CPU ops on CPU runs) whose time changed, instead of every interval.
WORK_SCHEMA: dict[str, pl.DataType] = {
    "rank": pl.Int32(),
    "step": pl.Int64(),
    "name": pl.String(),
    "ns": pl.Int64(),  # the summed durations of the step's intervals of that name
}

# Every rank's calls, with what the job adds (analysis/job.py); every column always there.
JOB_CALLS_SCHEMA: dict[str, pl.DataType] = {
    **CALLS_SCHEMA,
    # DDP bucket index: by the run record's layout, else by DDP's pattern (analysis/buckets.py)
    "bucket": pl.Int64(),
    "label": pl.String(),  # "bucket 3", else the FSDP module ("blocks.3", "root"), else null
    "match": pl.UInt32(),  # the call's match across ranks, where the job is aligned
    "wait_ns": pl.Int64(),  # until the last rank arrived (aligned jobs)
    "transfer_ns": pl.Int64(),  # after it arrived
    # What algbw/busbw divide by: "transfer" (aligned jobs: after the last rank arrived, as
    # nccl-tests times after a barrier), else "duration", which includes waiting for the last
    # rank: a lower bound on the bandwidth.
    "bandwidth_on": pl.String(),
}

# A step's figures (analysis/breakdown.py Breakdown, whose fields these are but `gaps_ns`,
# which no step has: a test checks).
BREAKDOWN_COLUMNS = (
    "start_ns",
    "end_ns",
    "compute_ns",
    "comm_ns",
    "overlap_ns",
    "exposed_comm_ns",
    "compute_only_ns",
    "idle_ns",
)

# A rank's steps as the store keeps them (docs/store.md).
STEPS_SCHEMA: dict[str, pl.DataType] = {
    "step": pl.Int64(),
    "partial": pl.Boolean(),  # the trace was cut short and this step may be missing work
    **{name: pl.Int64() for name in BREAKDOWN_COLUMNS},
    "window_ns": pl.Int64(),  # end_ns - start_ns, for queries
}
