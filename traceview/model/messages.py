"""Message sizes of collectives, in bytes, from what the trace records."""

from __future__ import annotations

import json

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
}


def dtype_bytes(dtype: str | None) -> int | None:
    return _DTYPE_BYTES.get(dtype.strip().lower()) if dtype else None


def from_counts(in_nelems: int | None, out_nelems: int | None, dtype: str | None) -> int | None:
    """record_param_comms: the larger of the input and output message (nccl-tests' "size")."""
    size = dtype_bytes(dtype)
    counts = [n for n in (in_nelems, out_nelems) if n is not None and n >= 0]
    if size is None or not counts:
        return None
    return max(counts) * size


def from_shapes(input_dims: str | None, input_type: str | None) -> int | None:
    """Input Dims / Input type of a collective op: the largest tensor (or tensor list) argument."""
    if not input_dims or not input_type:
        return None
    try:
        dims, types = json.loads(input_dims), json.loads(input_type)
    except ValueError:
        return None
    if not isinstance(dims, list) or not isinstance(types, list):
        return None
    best = None
    for shape, dtype in zip(dims, types, strict=False):
        size = dtype_bytes(dtype) if isinstance(dtype, str) else None
        if size is None or not isinstance(shape, list) or not shape:
            continue
        if all(isinstance(d, int) for d in shape):
            numel = _product(shape)
        elif all(isinstance(s, list) for s in shape):  # a list of tensors of one dtype
            numel = sum(_product(s) for s in shape)
        else:
            continue
        best = numel * size if best is None else max(best, numel * size)
    return best


def _product(shape: list[int]) -> int:
    out = 1
    for d in shape:
        out *= d
    return out
