"""Message sizes (the nccl-tests convention) and group sizes of collective calls, from every
trace vintage's way of recording them. Answers computed by hand; floats are 4 bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests import tracebuild as tb
from traceview import analyze_trace
from traceview.model import messages

US = 1000


def collective(
    c10d: str | None,
    kernel: str,
    *,
    c10d_args: dict[str, Any] | None = None,
    span: tuple[str, dict[str, Any]] | None = None,
    kernel_args: dict[str, Any] | None = None,
) -> list[tb.Event]:
    """One call in step 1: the c10d op [10, 30) around an optional nccl:* span and the launch
    at 15 µs; the kernel runs [40, 80) on stream 20 (40 µs)."""
    events = [tb.step(1, 0, 100), tb.launch(1, 15), tb.kernel(kernel, 40, 40, 1, stream=20)]
    if c10d:
        events.append(tb.cpu_op(c10d, 10, 20, **(c10d_args or {})))
    if span:
        events.append(tb.span(span[0], 12, 10, tid=1, **span[1]))
    if kernel_args:
        events[2]["args"].update(kernel_args)
    return events


def call(tmp_path, events, **doc) -> dict[str, Any]:
    report = analyze_trace(tb.write(tmp_path / "t.json", tb.document(events, **doc)))
    (row,) = report.calls.iter_rows(named=True)
    return row


def shapes(*tensors: tuple[list[int], str]) -> dict[str, Any]:
    return {"Input Dims": [list(d) for d, _ in tensors], "Input type": [t for _, t in tensors]}


AG_KERNEL = "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*)"
RS_KERNEL = "ncclKernel_ReduceScatter_RING_LL_Sum_float(ncclDevComm*)"
AR_KERNEL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)"
SENDRECV = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)"


def test_old_all_gather_is_the_gathered_output_and_its_group_the_ratio(tmp_path):
    # Before In/Out msg nelems: c10d::_allgather_base_(output [1024], input [128]) and the
    # nccl:_all_gather_base span recording only this rank's input. World 16, no pg_config.
    row = call(
        tmp_path,
        collective(
            "c10d::_allgather_base_",
            AG_KERNEL,
            c10d_args=shapes(([1024], "float"), ([128], "float")),
            span=("nccl:_all_gather_base", shapes(([128], "float"))),
        ),
        world=16,
    )
    assert (row["collective"], row["bytes"], row["group_size"]) == ("all_gather", 4096, 8)
    assert row["algbw_gbps"] == pytest.approx(4096 / (40 * US))
    assert row["busbw_gbps"] == pytest.approx(4096 / (40 * US) * 7 / 8)


def test_old_reduce_scatter_is_the_full_input(tmp_path):
    row = call(
        tmp_path,
        collective(
            "c10d::_reduce_scatter_base_",
            RS_KERNEL,
            c10d_args=shapes(([128], "float"), ([1024], "float")),  # output, then input
            span=("nccl:_reduce_scatter_base", shapes(([1024], "float"))),
        ),
        world=16,
    )
    assert (row["collective"], row["bytes"], row["group_size"]) == ("reduce_scatter", 4096, 8)


def test_old_all_to_all_is_the_whole_send_buffer(tmp_path):
    # alltoall_base_(output, input, ...): uneven splits, 120 elements received, 100 sent.
    row = call(
        tmp_path,
        collective(
            "c10d::alltoall_base_",
            SENDRECV,
            c10d_args=shapes(([120], "float"), ([100], "float")),
        ),
    )
    assert (row["collective"], row["bytes"]) == ("all_to_all", 400)


def test_counts_follow_the_same_convention(tmp_path):
    def counts(name: str, n_in: int, n_out: int) -> dict[str, Any]:
        return {"Collective name": name, "In msg nelems": n_in, "Out msg nelems": n_out}

    cases = [
        ("reduce_scatter", RS_KERNEL, counts("_reduce_scatter_base", 1024, 128), 4096),
        ("all_gather", AG_KERNEL, counts("_allgather_base", 128, 1024), 4096),
        ("all_to_all", SENDRECV, counts("all_to_all", 100, 120), 400),
        ("all_reduce", AR_KERNEL, counts("allreduce", 256, 256), 1024),
    ]
    for i, (kind, kernel, args, expected) in enumerate(cases):
        path = tmp_path / str(i)
        path.mkdir()
        row = call(path, collective(None, kernel, kernel_args={**args, "dtype": "Float"}))
        assert (row["collective"], row["bytes"]) == (kind, expected)


def test_group_size_from_the_call_then_pg_config_never_the_world(tmp_path):
    pg_config = [
        {"pg_name": "0", "pg_desc": "default_pg", "pg_size": 16},
        {"pg_name": "3", "pg_desc": "undefined", "pg_size": 8},
    ]
    meta = {"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 16}}
    meta["distributedInfo"]["pg_config"] = pg_config
    args = {"Collective name": "allreduce", "In msg nelems": 256, "dtype": "Float"}

    def size_of(sub: str, **kernel_args: Any) -> int | None:
        path = tmp_path / sub
        path.mkdir()
        events = collective(None, AR_KERNEL, kernel_args={**args, **kernel_args})
        doc = {**tb.document(events, rank=None), **meta}
        report = analyze_trace(tb.write(path / "t.json", doc))
        (row,) = report.calls.iter_rows(named=True)
        assert (row["busbw_gbps"] is None) == (row["group_size"] is None)
        return row["group_size"]

    assert size_of("arg", **{"Group size": 4, "Process Group Name": "3"}) == 4
    assert size_of("ranks", **{"Process Group Ranks": "[0, 2, 4]"}) == 3
    assert size_of("pg", **{"Process Group Name": "3"}) == 8  # groups of 8 in a world of 16
    assert size_of("default", **{"Process Group Description": "default_pg"}) == 16
    assert size_of("unknown") is None  # two sizes of group, and nothing names this call's


def test_one_size_for_every_group_is_every_calls_size(tmp_path):
    pg_config = [{"pg_name": str(i), "pg_desc": "undefined", "pg_size": 300} for i in range(3)]
    meta = {"backend": "gloo", "rank": 0, "world_size": 300, "pg_count": 3}
    events = collective(
        None, AR_KERNEL, kernel_args={"Collective name": "allreduce", "In msg nelems": 1}
    )
    doc = {**tb.document(events, rank=None), "distributedInfo": {**meta, "pg_config": pg_config}}
    report = analyze_trace(tb.write(tmp_path / "t.json", doc))
    assert report.calls["group_size"].to_list() == [300]
    # Groups the trace does not list may be of other sizes: then nothing is assumed.
    doc["distributedInfo"]["pg_count"] = 4
    report = analyze_trace(tb.write(tmp_path / "t.json", doc))
    assert report.calls["group_size"].to_list() == [None]


def test_a_size_beyond_int64_is_unknown_not_an_error(tmp_path):
    # 2^62 floats are 2^64 bytes: past what the tables hold. A hostile trace's call keeps its
    # collective; its size is unknown. So is an all_gather's output computed past int64.
    huge = 1 << 62
    counted = {"Collective name": "allreduce", "In msg nelems": huge, "dtype": "Float"}
    row = call(tmp_path, collective(None, AR_KERNEL, kernel_args=counted))
    assert (row["collective"], row["bytes"]) == ("all_reduce", None)
    (tmp_path / "shapes").mkdir()
    row = call(
        tmp_path / "shapes",
        collective(
            "c10d::allreduce_", AR_KERNEL, c10d_args=shapes(([huge, 2], "float"), ([1], "float"))
        ),
    )
    assert (row["collective"], row["bytes"]) == ("all_reduce", None)
    (tmp_path / "gathered").mkdir()
    gathered = {"Collective name": "_allgather_base", "In msg nelems": huge // 4}
    gathered |= {"dtype": "Float", "Group size": 8}  # in: 2^62 bytes; out: 2^65
    row = call(tmp_path / "gathered", collective(None, AG_KERNEL, kernel_args=gathered))
    assert (row["collective"], row["group_size"], row["bytes"]) == ("all_gather", 8, None)


def test_calls_alike_and_unlike_each_get_their_own_sizes(tmp_path):
    # Sizes are worked out once per distinct set of arguments: three all_reduce calls of 256,
    # 256 and 64 floats, and one whose dtype is missing, each keep their own (1024, 1024, 256,
    # unknown), in the order they ran.
    events = [tb.step(1, 0, 1000)]
    for i, (n, dtype) in enumerate([(256, "Float"), (256, "Float"), (64, "Float"), (8, None)]):
        at = 100 * (i + 1)
        args = {"Collective name": "allreduce", "In msg nelems": n, "Out msg nelems": n}
        if dtype:
            args["dtype"] = dtype
        kernel = tb.kernel(AR_KERNEL, at + 20, 10, i + 1, stream=20)
        kernel["args"].update(args)
        events += [tb.launch(i + 1, at), kernel]
    report = analyze_trace(tb.write(tmp_path / "t.json", tb.document(events)))
    calls = report.calls.sort("start_ns")
    assert calls["bytes"].to_list() == [1024, 1024, 256, None]
    assert calls["collective"].to_list() == ["all_reduce"] * 4


def test_each_side_from_its_count_else_from_the_tensors():
    # One rule for CPU calls and Gloo spans alike: a side whose count is recorded (with a dtype
    # of known size) is read from it, the other from the op's tensors. Floats: 4 bytes.
    gather_shapes = ("[[1024], [128]]", '["float", "float"]')  # output, then input
    only_in = messages.recorded_sizes("c10d::_allgather_base_", 128, None, "Float", *gather_shapes)
    assert only_in == ((512, True), (4096, False), 4)
    # An unknown dtype makes the counts unreadable: both sides (and the element) from the tensors.
    unknown = messages.recorded_sizes("c10d::_allgather_base_", 128, 1024, "Float9", *gather_shapes)
    assert unknown == ((512, False), (4096, False), 4)
    # A Gloo span's tensors are its input only; its counts give both sides.
    span_shapes = ("[[256]]", '["float"]')
    assert messages.recorded_sizes("gloo:all_reduce", None, None, None, *span_shapes) == (
        (1024, False),
        (None, False),
        4,
    )
    assert messages.recorded_sizes("gloo:all_reduce", 256, 256, "Float", *span_shapes) == (
        (1024, True),
        (1024, True),
        4,
    )


def test_the_element_size_from_the_dtype_else_the_one_size_the_tensors_share():
    assert messages.element_bytes("BFloat16", '["float"]') == 2  # the recorded dtype first
    assert messages.element_bytes(None, '["TensorList", "", "Scalar"]') is None  # nothing says
    assert messages.element_bytes(None, '["c10::BFloat16", "c10::BFloat16", ""]') == 2
    assert messages.element_bytes(None, '["float", "c10::Half"]') is None  # they disagree
    assert messages.element_bytes(None, "not json") is None
    # Elements: the nccl-tests size over the element size, only where it divides.
    assert messages.message_elements(2000, 2) == 1000
    assert messages.message_elements(2001, 2) is None
    assert messages.message_elements(None, 2) is None and messages.message_elements(8, None) is None


# Every dtype a gradient or a collective's buffer may have: torch's name, and the name
# record_param_comms writes (c10's ScalarType).
DTYPES = [
    ("float32", "Float"),
    ("float64", "Double"),
    ("float16", "Half"),
    ("bfloat16", "BFloat16"),
    ("int8", "Char"),
    ("uint8", "Byte"),
    ("int16", "Short"),
    ("uint16", "UInt16"),
    ("int32", "Int"),
    ("uint32", "UInt32"),
    ("int64", "Long"),
    ("uint64", "UInt64"),
    ("bool", "Bool"),
    ("complex32", "ComplexHalf"),
    ("complex64", "ComplexFloat"),
    ("complex128", "ComplexDouble"),
    ("float8_e4m3fn", "Float8_e4m3fn"),
    ("float8_e5m2", "Float8_e5m2"),
    ("float8_e4m3fnuz", "Float8_e4m3fnuz"),
    ("float8_e5m2fnuz", "Float8_e5m2fnuz"),
    ("float8_e8m0fnu", "Float8_e8m0fnu"),
    ("float4_e2m1fn_x2", "Float4_e2m1fn_x2"),
]


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_every_dtype_spelling_has_its_size(tmp_path):
    # The sizes are torch's own; the spellings of "Input type" are those its profiler writes.
    torch = pytest.importorskip("torch")
    from torch.profiler import profile

    tensors = [torch.zeros(4, dtype=getattr(torch, name)) for name, _ in DTYPES]
    with profile(record_shapes=True) as prof:
        for t in tensors:
            torch.ops.aten.clone(t)
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    written = [
        e["args"]["Input type"][0]
        for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"]
        if e.get("name") == "aten::clone"
    ]
    assert len(written) == len(tensors)
    for (name, scalar_type), t, spelling in zip(DTYPES, tensors, written, strict=True):
        size = t.element_size()
        assert messages.dtype_bytes(spelling) == size, (name, spelling)
        assert messages.dtype_bytes(scalar_type) == size, (name, scalar_type)


def test_symmetric_memory_collectives_are_communication_typed_and_sized_by_their_op(tmp_path):
    # symm_mem::multimem_all_reduce_ of 1 Mi bf16 elements (2 MiB) on an 8-rank group launches
    # its own kernel, not named nccl*: communication all the same, an all-reduce of 2 MiB.
    # symm_mem::fused_all_gather_matmul's matmul kernel stays compute.
    reduce_args = {"Input Dims": [[1048576], [], []], "Input type": ["c10::BFloat16", "", ""]}
    gather_args = {
        "Input Dims": [[512, 64], [], [4096, 64]],
        "Input type": ["c10::BFloat16", "", "c10::BFloat16"],
    }
    events = [
        tb.step(1, 0, 1000),
        tb.cpu_op("symm_mem::multimem_all_reduce_", 10, 20, **reduce_args),
        tb.launch(1, 15),
        tb.kernel("void c10d::symmetric_memory::multimem_all_reduce_kernel<bf16, 8>", 40, 60, 1),
        tb.cpu_op("symm_mem::multimem_all_gather_out", 110, 20, **gather_args),
        tb.launch(2, 115),
        tb.kernel("void c10d::symmetric_memory::multimem_all_gather_kernel<8>", 140, 30, 2),
        tb.cpu_op("symm_mem::fused_all_gather_matmul", 200, 50),
        tb.launch(3, 210),
        tb.kernel("sm90_xmma_gemm_bf16bf16_bf16f32", 260, 100, 3),
    ]
    pgs = {"pg_config": [{"pg_name": "0", "pg_size": 8, "pg_desc": "default_pg"}], "pg_count": 1}
    doc = tb.document(events, rank=0, world=8)
    doc["distributedInfo"] |= pgs
    report = analyze_trace(tb.write(tmp_path / "t.json", doc))
    calls = report.calls.sort("start_ns")
    assert calls["collective"].to_list() == ["all_reduce", "all_gather"]
    assert calls["bytes"].to_list() == [2 * 1048576, 2 * 4096 * 64]  # the gather's output
    assert calls["elements"].to_list() == [1048576, 4096 * 64]
    assert calls["group_size"].to_list() == [8, 8]
    assert report.total is not None
    # Compute: the matmul alone [260,360); communication [40,100) and [140,170).
    assert (report.total.compute_ns, report.total.comm_ns) == (100_000, 90_000)
