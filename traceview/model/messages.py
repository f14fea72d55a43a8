"""Message and group sizes of collectives, from what the trace records.

One convention for every trace vintage: the size nccl-tests reports (which its bus-bandwidth
factors assume) — all_reduce, broadcast, reduce: the buffer; all_gather: the gathered output;
reduce_scatter: the full input; all_to_all: the whole send buffer. A call's input and output
bytes are read from the best source there is (`In/Out msg nelems` × dtype; else the c10d op's
tensor arguments, output and input in the op's own order; else the input tensor recorded by
`record_param_comms` or the `nccl:*` span), then folded into that size by `message_bytes`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import polars as pl

from traceview.model.batch import keyed
from traceview.model.distinct import per_distinct
from traceview.parse import Trace

INT64_MAX = (1 << 63) - 1

# Element sizes by the spellings PyTorch uses: ScalarType names ("Float", "BFloat16") in
# record_param_comms, C++ type names ("float", "c10::BFloat16") in Input type.
_DTYPE_BYTES = {
    "float": 4,
    "float32": 4,
    "double": 8,
    "float64": 8,
    "half": 2,
    "float16": 2,
    "c10::half": 2,
    "bfloat16": 2,
    "c10::bfloat16": 2,
    "int": 4,
    "int32": 4,
    "long": 8,
    "long int": 8,
    "int64": 8,
    "short": 2,
    "int16": 2,
    "char": 1,
    "signed char": 1,
    "int8": 1,
    "byte": 1,
    "unsigned char": 1,
    "uint8": 1,
    "bool": 1,
    "complexfloat": 8,
    "c10::complex<float>": 8,
    "complexdouble": 16,
    "c10::complex<double>": 16,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "c10::float8_e4m3fn": 1,
    "c10::float8_e5m2": 1,
    # ROCm's float8 kinds, the scale type, packed 4-bit floats (two to a byte), the unsigned
    # integers and the complex half, in both spellings.
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1,
    "float4_e2m1fn_x2": 1,
    "c10::float8_e4m3fnuz": 1,
    "c10::float8_e5m2fnuz": 1,
    "c10::float8_e8m0fnu": 1,
    "c10::float4_e2m1fn_x2": 1,
    "short int": 2,
    "uint16": 2,
    "short unsigned int": 2,
    "uint32": 4,
    "unsigned int": 4,
    "uint64": 8,
    "long unsigned int": 8,
    "complexhalf": 4,
    "c10::complex<c10::half>": 4,
}

# c10d ops whose first tensor argument is the output and the second the input (the others take
# the tensor they work on in place, or their input, first).
_OUTPUT_THEN_INPUT = frozenset(
    f"c10d::{op}"
    for op in (
        "_allgather_base_",
        "allgather_",
        "allgather_coalesced_",
        "allgather_into_tensor_coalesced_",
        "_reduce_scatter_base_",
        "reduce_scatter_",
        "reduce_scatter_tensor_coalesced_",
        "alltoall_base_",
        "alltoall_",
        "gather_",
        "scatter_",
    )
)
_OUTPUT_ONLY = frozenset({"c10d::recv_", "c10d::recv_any_source_"})
# Where a group of n ranks makes the output n times the input, or the input n times the output.
_GATHERS = ("all_gather",)
_SCATTERS = ("reduce_scatter",)


# The recorded args (parse/args.py columns) a call's sizes are read from (recorded_sizes):
# from_counts takes the first three, from_shapes the last two.
SIZE_ARGS = ("in_nelems", "out_nelems", "dtype", "input_dims", "input_type")


def dtype_bytes(dtype: str | None) -> int | None:
    return _DTYPE_BYTES.get(dtype.strip().lower()) if dtype else None


def from_counts(
    in_nelems: int | None, out_nelems: int | None, dtype: str | None
) -> tuple[int | None, int | None]:
    """(input, output) bytes from `In msg nelems` / `Out msg nelems` and `dtype`."""
    size = dtype_bytes(dtype)
    if size is None:
        return None, None

    def scaled(n: int | None) -> int | None:
        return _int64(n * size) if n is not None and n >= 0 else None

    return scaled(in_nelems), scaled(out_nelems)


def from_shapes(
    op: str, input_dims: str | None, input_type: str | None
) -> tuple[int | None, int | None]:
    """(input, output) bytes from an op's `Input Dims` / `Input type`: c10d ops by their own
    argument order; record_param_comms and nccl:* spans record only the input tensor(s)."""
    if not input_dims or not input_type:
        return None, None
    try:
        dims, types = json.loads(input_dims), json.loads(input_type)
    except (ValueError, RecursionError):
        return None, None
    if not isinstance(dims, list) or not isinstance(types, list):
        return None, None
    sizes = [_tensor_bytes(d, t) for d, t in zip(dims, types, strict=False)]
    first = sizes[0] if sizes else None
    if op in _OUTPUT_THEN_INPUT:
        return (sizes[1] if len(sizes) > 1 else None), first
    if op in _OUTPUT_ONLY:
        return None, first
    if op.endswith("_out") and len(sizes) > 1:  # out= variants take their output last
        return first, next((s for s in reversed(sizes[1:]) if s is not None), None)
    return first, None


def recorded_sizes(
    op: str,
    in_nelems: int | None,
    out_nelems: int | None,
    dtype: str | None,
    input_dims: str | None,
    input_type: str | None,
) -> tuple[tuple[int | None, bool], tuple[int | None, bool], int | None]:
    """(input, output, element) bytes of one op: each side from its element count where that
    and the dtype are recorded, else from the op's tensors, with True where the count gave it;
    and the size of one element of the message (element_bytes). The arguments after `op` are
    SIZE_ARGS, in that order."""
    counts = from_counts(in_nelems, out_nelems, dtype)
    shapes = from_shapes(op, input_dims, input_type)

    def side(i: int) -> tuple[int | None, bool]:
        return (counts[i], True) if counts[i] is not None else (shapes[i], False)

    return side(0), side(1), element_bytes(dtype, input_type)


def element_bytes(dtype: str | None, input_type: str | None) -> int | None:
    """The size of one element of a call's message: its recorded `dtype`, else the one size
    its tensors' types share (`Input type`); None when neither says or they disagree."""
    if (size := dtype_bytes(dtype)) is not None:
        return size
    if not input_type:
        return None
    try:
        types = json.loads(input_type)
    except (ValueError, RecursionError):
        return None
    if not isinstance(types, list):
        return None
    sizes = {dtype_bytes(t) for t in types if isinstance(t, str)} - {None}
    return sizes.pop() if len(sizes) == 1 else None


def _tensor_bytes(shape: object, dtype: object) -> int | None:
    """A tensor's bytes, or a list of tensors' of one dtype; None for anything else."""
    size = dtype_bytes(dtype) if isinstance(dtype, str) else None
    if size is None or not isinstance(shape, list) or not shape:
        return None
    if all(isinstance(d, int) for d in shape):
        return _int64(_product(shape) * size)  # type: ignore[arg-type]
    if all(isinstance(s, list) and all(isinstance(d, int) for d in s) for s in shape):
        return _int64(sum(_product(s) for s in shape) * size)  # type: ignore[arg-type]
    return None


def _int64(n: int) -> int | None:
    """A size as the tables hold it (int64, not negative); beyond that no real trace goes, and
    a hostile one's size is unknown."""
    return n if 0 <= n <= INT64_MAX else None


def _product(shape: list[int]) -> int:
    out = 1
    for d in shape:
        out *= d
    return out


def ratio_group_size(
    collective: str | None, in_bytes: int | None, out_bytes: int | None
) -> int | None:
    """An all-gather's output is n inputs, a reduce-scatter's input n outputs: n, the group."""
    if not in_bytes or not out_bytes:
        return None
    if collective in _GATHERS:
        big, small = out_bytes, in_bytes
    elif collective in _SCATTERS:
        big, small = in_bytes, out_bytes
    else:
        return None
    return big // small if big % small == 0 and big >= small else None


def message_bytes(
    collective: str | None, in_bytes: int | None, out_bytes: int | None, group_size: int | None
) -> int | None:
    """The nccl-tests size of one call (see the module docstring)."""
    if collective in _GATHERS:
        if out_bytes is not None:
            return out_bytes
        return _int64(in_bytes * group_size) if in_bytes is not None and group_size else None
    if collective in _SCATTERS:
        if in_bytes is not None:
            return in_bytes
        return _int64(out_bytes * group_size) if out_bytes is not None and group_size else None
    if collective == "all_to_all":
        return in_bytes
    known = [b for b in (in_bytes, out_bytes) if b is not None]
    return max(known) if known else None


class GroupSizes:
    """What a trace's `distributedInfo` says of its process groups' sizes."""

    def __init__(self, pg_config: tuple[dict[str, object], ...], pg_count: int | None) -> None:
        self.by_name: dict[str, int] = {}
        self.default_names: set[str] = set()
        for pg in pg_config:
            name, size = pg.get("pg_name"), pg.get("pg_size")
            if isinstance(name, str) and isinstance(size, int) and 1 <= size <= INT64_MAX:
                self.by_name[name] = size
                if pg.get("pg_desc") == "default_pg":
                    self.default_names.add(name)
        sizes = set(self.by_name.values())
        complete = pg_count is None or len(self.by_name) >= pg_count
        # Every group of the job the same size: whichever group a call ran on, it had that size.
        self.uniform = sizes.pop() if len(sizes) == 1 and complete else None
        # The job has one process group: a call that names none ran on it (Gloo's calls name
        # none; desync checks need to know they share a group).
        self.only = next(iter(self.by_name)) if pg_count == 1 and len(self.by_name) == 1 else None


def trace_groups(trace: Trace) -> GroupSizes:
    return GroupSizes(trace.meta.pg_config, trace.meta.pg_count)


def group_size(
    *,
    recorded: int | None,
    pg: str | None,
    pg_desc: str | None,
    collective: str | None,
    in_bytes: int | None,
    out_bytes: int | None,
    groups: GroupSizes,
    world_size: int | None,
) -> int | None:
    """The size of the group a call ran on: its `Group size` arg (or `Process Group Ranks`);
    else its group's size in pg_config (or the one size all groups there share); else, for an
    all-gather or reduce-scatter, the ratio of its output to input; else the world size where
    the call is known to run on the default group. Else unknown: never the world by default."""
    if recorded is not None and recorded >= 1:
        return recorded
    if pg is not None and pg in groups.by_name:
        return groups.by_name[pg]
    if groups.uniform is not None:
        return groups.uniform
    if (ratio := ratio_group_size(collective, in_bytes, out_bytes)) is not None:
        return ratio
    if pg_desc == "default_pg" or (pg is not None and pg in groups.default_names):
        return world_size
    return None


# The columns every source of communication rows fills in before `with_sizes` resolves them.
MESSAGE_COLUMNS: dict[str, pl.DataType] = {
    "collective": pl.String(),
    "in_bytes": pl.Int64(),
    "out_bytes": pl.Int64(),
    "elem_bytes": pl.Int64(),  # the size of one element of the message, where recorded
    "arg_group_size": pl.Int64(),  # as recorded with the call, if it was
    "pg": pl.String(),
    "pg_desc": pl.String(),
    "seq": pl.Int64(),
}


def message_elements(size: int | None, elem_bytes: int | None) -> int | None:
    """The message in elements (Ψ counts elements: a bf16 gather of Ψ elements is Ψ)."""
    if size is None or not elem_bytes or size % elem_bytes:
        return None
    return size // elem_bytes


def with_sizes(
    frame: pl.DataFrame, groups: Sequence[GroupSizes], world_sizes: Sequence[int | None]
) -> pl.DataFrame:
    """Add `group_size`, `bytes` (the nccl-tests size) and `elements` (the same in elements)
    to rows with MESSAGE_COLUMNS, each read with its own trace's groups and world size (by its
    part, model/batch.py), and drop the raw ones."""

    inputs = keyed(frame, *(c for c in MESSAGE_COLUMNS if c != "seq"))  # each call its own seq
    parted = len(inputs) > len(MESSAGE_COLUMNS) - 1  # rows of several traces: part first

    def sizes(*row: Any) -> tuple[int | None, int | None, int | None, str | None]:
        part, (collective, in_bytes, out_bytes, elem_bytes, recorded, pg, pg_desc) = (
            (row[0], row[1:]) if parted else (0, row)
        )
        n = group_size(
            recorded=recorded,
            pg=pg,
            pg_desc=pg_desc,
            collective=collective,
            in_bytes=in_bytes,
            out_bytes=out_bytes,
            groups=groups[part],
            world_size=world_sizes[part],
        )
        size = message_bytes(collective, in_bytes, out_bytes, n)
        # The job's one group, where a call names none (Gloo's calls name none; desync checks
        # need to know they share a group).
        only = groups[part].only
        return n, size, message_elements(size, elem_bytes), pg if pg is not None else only

    return (
        per_distinct(
            frame.drop("group_size", "bytes", "elements", strict=False),
            inputs,
            sizes,
            {
                "group_size": pl.Int64(),
                "bytes": pl.Int64(),
                "elements": pl.Int64(),
                "_pg": pl.String(),
            },
        )
        .with_columns(pg=pl.col("_pg"))
        .drop("_pg", "in_bytes", "out_bytes", "elem_bytes", "arg_group_size", "pg_desc")
    )
