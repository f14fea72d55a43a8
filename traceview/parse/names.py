"""What an event's name says: collective kernels, collective calls, waits, steps. Declared
once: the parser keeps the args of the events these rules call communication, and the model
classifies events by them.

Patterns use the regex syntax of polars (Rust's: no look-around), and run over the columns;
the few that Python also runs (KEEPS_ARGS) are plain enough for both.
"""

from __future__ import annotations

import re

import polars as pl

# The accelerators' collectives libraries, as their kernels and CPU spans begin: NVIDIA's
# and AMD's (ncclDevKernel_..., nccl:all_reduce), MTIA's (hccl:...) and Intel XPU's oneCCL,
# which PyTorch and Kineto call XCCL (xccl:all_reduce, xccl::allreduce).
LIBRARIES = ("nccl", "rccl", "hccl", "xccl")
# Ascend's HCCL names its collectives' device tasks hcom_<collective>_ (hcom_allReduce__503_0_1).
ASCEND_COMM_KERNEL = "hcom_"
# CPU ops that launch a collective (nested ones describe the same call): c10d::allreduce_,
# _c10d_functional::all_gather_into_tensor, nccl:all_reduce, record_param_comms, and the
# symmetric-memory ops that run a collective in kernels of their own
# (symm_mem::multimem_all_reduce_, one_shot_all_reduce, all_to_all_vdev over NVSHMEM, ...).
SYMM_MEM_PREFIX = "symm_mem::"
CALL_PREFIXES = (
    "c10d::",
    "_c10d_functional::",
    SYMM_MEM_PREFIX,
    *(f"{lib}:" for lib in LIBRARIES),
)
CALL_NAMES = ("record_param_comms",)
GLOO_PREFIX = "gloo:"


def _either(words: tuple[str, ...]) -> str:
    return "|".join(re.escape(w) for w in words)


# Collectives libraries' kernels: ncclKernel_AllReduce_RING_LL_Sum_float(...),
# ncclDevKernel_Generic(...), hccl:all_reduce, xccl::allreduce, hcom_allGather__12_0_1.
COMM_KERNEL = rf"(?i)^(?:void\s+)?(?:{_either((*LIBRARIES, ASCEND_COMM_KERNEL))})"
# Gloo runs each collective as a span on a pt_gloo_runloop thread: gloo:all_reduce, ...
GLOO_SPAN = rf"^{re.escape(GLOO_PREFIX)}"
COMM_CALL = rf"^(?:{_either(CALL_PREFIXES)}|(?:{_either(CALL_NAMES)})$)"
# The CPU spans of NCCL/RCCL collectives: a trace that has them launched GPU communication.
GPU_COLLECTIVE_SPAN = rf"^(?:{_either(tuple(f'{lib}:' for lib in LIBRARIES))})"
# A gradient made ready by the backward pass: one op per parameter with a gradient, its
# `Input Dims` the gradient's shape (record_shapes=True). DDP buckets a gradient when it is ready.
GRADIENT_READY = r"^torch::autograd::AccumulateGrad$"
# Events whose args the parser keeps (and only those: shapes are large): those describing a
# collective, and the gradients made ready (their sizes: model/gradients.py). COMM_KERNEL's
# (?i) leads, so the whole pattern ignores case.
KEEPS_ARGS = re.compile(f"{COMM_KERNEL}|{GLOO_SPAN}|{COMM_CALL}|{GRADIENT_READY}")
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
# Communication of the backward pass that FSDP launches from its backward hooks and callbacks,
# outside autograd's functions (FSDP2 launches the root's gradient reduce-scatter from
# "FSDP::root_post_backward_callback"; FSDP1 names its hooks "FullyShardedDataParallel._...").
FSDP_BACKWARD_HOOK = (
    r"^FSDP::(?:pre_backward|post_backward|root_post_backward|backward_prefetch)"
    r"|^FullyShardedDataParallel\._(?:pre|post)_backward"
)
# The record functions the data-parallel wrappers write, which tell which one a trace ran.
WRAPPER_SPANS = {
    "ddp": r"^DistributedDataParallel\.forward$",
    "zero_redundancy_optimizer": r"#ZeroRedundancyOptimizer\.step$",
    "fsdp2": FSDP_SPAN,
    "fsdp1": r"^FullyShardedDataParallel\.",
}
GLOO_THREAD = "pt_gloo_runloop"

_PREFIXES = re.compile(
    rf"^(?:{_either((*CALL_PREFIXES, GLOO_PREFIX))}|(?:{_either(LIBRARIES)})(?:Dev)?Kernel_)"
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


# symm_mem ops fused with compute (fused_all_gather_matmul, _async_input_mm): their kernels
# are not all communication.
_FUSED_WITH_COMPUTE = re.compile(r"matmul|(?:^|_)mm(?:_|$)")


def runs_own_collective(op: str) -> bool:
    """A symmetric-memory op whose kernels are the collective it names: every kernel it
    launches is communication, whatever the kernel is called (multimem_all_reduce_kernel)."""
    if not op.startswith(SYMM_MEM_PREFIX):
        return False
    bare = op.removeprefix(SYMM_MEM_PREFIX)
    return collective_of(op) is not None and not _FUSED_WITH_COMPUTE.search(bare)


def named(frame: pl.DataFrame, pattern: str, column: str = "name") -> pl.Expr:
    """True for the rows of `frame` whose name matches `pattern`. The regex runs once per
    distinct name, not once per event: traces repeat a few thousand names millions of times.
    Names held as categories are read from the categories themselves (every name this process
    has seen, a superset): finding the distinct names of millions of rows costs more."""
    dtype = frame.get_column(column).dtype
    if isinstance(dtype, pl.Categorical):
        return _category_match(dtype, pattern, column)
    names = frame[column].unique().drop_nulls()
    return _is_in(column, names.filter(names.cast(pl.String).str.contains(pattern)))


def _is_in(column: str, hits: pl.Series) -> pl.Expr:
    return pl.col(column).is_in(hits.implode()) if hits.len() else pl.lit(False)


# (column, pattern, categories) -> how many categories were matched, those that matched, and
# the expression that picks them (made once: it costs more than the rest of a call).
# Categories are only ever added, never renamed: when there are more, only the new ones are
# matched. A trace of many steps (a name each) has hundreds of thousands, a worker that reads
# many traces keeps adding some, and a model asks of a dozen patterns.
_HITS: dict[tuple[str, str, str, str], tuple[int, pl.Series, pl.Expr]] = {}


def _category_match(dtype: pl.Categorical, pattern: str, column: str) -> pl.Expr:
    categories = dtype.categories
    known = categories._categories.num_cats_upper_bound()
    key = (column, pattern, categories.name(), categories.namespace())
    found = _HITS.get(key)
    if found is not None and found[0] == known:
        return found[2]
    if len(_HITS) > 256:  # patterns made from a trace's own op names: no longer asked for
        _HITS.clear()
    names, text, start = _categories_from(dtype, 0 if found is None else found[0], known)
    new = names.filter(text.str.contains(pattern))
    hits = new if found is None or start == 0 else pl.concat([found[1], new])
    match = _is_in(column, hits)
    _HITS[key] = (known, hits, match)
    return match


# The categories made last (their name, namespace and the ids asked for) -> them, their text and
# the id they start at: the dozen patterns a model asks of one trace match the same categories,
# made and read as text once, and each pattern then costs one match and one filter (it had
# cost six polars calls: CHANGELOG.md, "Speed work before the changelog").
_MADE: dict[tuple[str, str, int, int], tuple[pl.Series, pl.Series, int]] = {}


def _categories_from(
    dtype: pl.Categorical, start: int, known: int
) -> tuple[pl.Series, pl.Series, int]:
    """The categories with ids start..known, made from their ids (polars' own to_series walks
    them all in Python), their text, and the id they start at; where that cannot be done (an
    id reserved but not yet given a name), every category, from 0."""
    key = (dtype.categories.name(), dtype.categories.namespace(), start, known)
    made = _MADE.get(key)
    if made is None:
        try:
            names = pl.arange(start, known, dtype=pl.UInt32, eager=True).cat.to(dtype)
        except pl.exceptions.ComputeError:
            names, start = dtype.categories.to_series().cast(dtype), 0
        made = (names, names.cast(pl.String), start)
        _MADE.clear()  # only the last: a worker's next trace adds categories
        _MADE[key] = made
    return made
