"""What an event's name says: collective kernels, collective calls, waits, steps.

Patterns use the regex syntax of polars (Rust's: no look-around), and run over the columns.
"""

from __future__ import annotations

import re

import polars as pl

# NCCL/RCCL kernels: ncclKernel_AllReduce_RING_LL_Sum_float(...), ncclDevKernel_Generic(...).
COMM_KERNEL = r"(?i)^(?:void\s+)?(?:nccl|rccl)"
# Gloo runs each collective as a span on a pt_gloo_runloop thread: gloo:all_reduce, ...
GLOO_SPAN = r"^gloo:"
# CPU ops that launch a collective; nested ones describe the same call.
COMM_CALL = r"^(?:c10d::|record_param_comms$|nccl:|rccl:|_c10d_functional::)"
# The CPU spans of NCCL/RCCL collectives: a trace that has them launched GPU communication.
GPU_COLLECTIVE_SPAN = r"^(?:nccl|rccl):"
# Kernel names that may be communication a trace's own collectives library runs (custom
# all-to-all for expert parallelism, NVSHMEM, MSCCL++, ...): offered to --comm-pattern.
MAYBE_COMM_KERNEL = (
    r"(?i)all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|alltoall|a2a|broadcast|"
    r"send|recv|dispatch|combine|comm|nvshmem|mscclpp|deep_?ep|ep::|p2p"
)
# Ops and spans that only wait for communication (c10d::wait, wait_tensor, FSDP's
# "post_backward_rs_wait (...)"); a wait is never compute.
WAIT_OP = r"(?i)(?:^|::|\.|_)wait(?:\b|_)|^cudaStreamWaitEvent$"
PROFILER_STEP = r"^ProfilerStep#(\d+)$"
# The autograd engine runs every backward function inside one of these CPU ops.
AUTOGRAD_OP = r"^autograd::engine::evaluate_function: "
# FSDP2's record functions: "FSDP::all_gather (blocks.0)", "FSDP::post_backward_reduce", ...
FSDP_SPAN = r"^FSDP::"
GLOO_THREAD = "pt_gloo_runloop"

_PREFIXES = re.compile(
    r"^(?:c10d::|_c10d_functional::|nccl:|rccl:|gloo:|ncclDevKernel_|ncclKernel_)"
)
# Checked in order: the first fragment found in the folded name wins.
_COLLECTIVES = (
    ("allreduce", "all_reduce"),
    ("reducescatter", "reduce_scatter"),
    ("allgather", "all_gather"),
    ("alltoall", "all_to_all"),
    ("broadcast", "broadcast"),
    ("sendrecv", "send_recv"),
    ("barrier", "barrier"),
    ("reduce", "reduce"),
    ("gather", "gather"),
    ("scatter", "scatter"),
    ("send", "send"),
    ("recv", "recv"),
)


def collective_of(name: str | None) -> str | None:
    """Fold the many spellings (c10d::_reduce_scatter_base_, ncclKernel_AllReduce_..., "allreduce",
    gloo:all_reduce) onto one name: all_reduce, reduce_scatter, all_gather, all_to_all, ..."""
    if not name:
        return None
    folded = _PREFIXES.sub("", name).split("(")[0].replace("_", "").lower()
    for fragment, collective in _COLLECTIVES:
        if fragment in folded:
            return collective
    return None


def named(frame: pl.DataFrame, pattern: str, column: str = "name") -> pl.Expr:
    """True for the rows of `frame` whose name matches `pattern`. The regex runs once per
    distinct name, not once per event: traces repeat a few thousand names millions of times."""
    names = frame[column].unique().drop_nulls()
    hits = names.filter(names.cast(pl.String).str.contains(pattern))
    return pl.col(column).is_in(hits.implode()) if hits.len() else pl.lit(False)
