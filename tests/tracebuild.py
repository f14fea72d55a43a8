"""Tiny hand-built traces in the Kineto format, for tests whose answers are computed by hand.
Times are given in microseconds, as the profiler writes them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

Event = dict[str, Any]
PID = 4242


def step(n: int, ts: float, dur: float, tid: int = 1) -> Event:
    return {
        "ph": "X",
        "cat": "user_annotation",
        "name": f"ProfilerStep#{n}",
        "pid": PID,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": {},
    }


def cpu_op(name: str, ts: float, dur: float, tid: int = 1, **args: Any) -> Event:
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": name,
        "pid": PID,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def gradient_ready(ts: float, shape: list[int], dtype: str = "float", tid: int = 1) -> Event:
    """The op that makes one parameter's gradient ready in backward, with its shape as
    record_shapes=True records it."""
    return cpu_op(
        "torch::autograd::AccumulateGrad",
        ts,
        5,
        tid,
        **{"Input Dims": [shape], "Input type": [dtype]},
    )


def span(name: str, ts: float, dur: float, tid: int, **args: Any) -> Event:
    return {
        "ph": "X",
        "cat": "user_annotation",
        "name": name,
        "pid": PID,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def launch(corr: int, ts: float, tid: int = 1, name: str = "cudaLaunchKernel") -> Event:
    return {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": name,
        "pid": PID,
        "tid": tid,
        "ts": ts,
        "dur": 1,
        "args": {"correlation": corr, "External id": corr},
    }


def kernel(
    name: str, ts: float, dur: float, corr: int, stream: int = 7, cat: str = "kernel", **args: Any
) -> Event:
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": 0,
        "tid": stream,
        "ts": ts,
        "dur": dur,
        "args": {"device": 0, "stream": stream, "correlation": corr, **args},
    }


def collective(
    name: str,
    ts: float,
    dur: float,
    corr: int,
    collective: str,
    nelems: tuple[int, int],
    dtype: str = "Float",
    group: int | None = 2,
    stream: int = 20,
    **args: Any,
) -> Event:
    """An NCCL kernel with the args recent PyTorch records on it (In/Out msg nelems, dtype,
    Group size), on a communication stream."""
    recorded = {
        "Collective name": collective,
        "In msg nelems": nelems[0],
        "Out msg nelems": nelems[1],
        "dtype": dtype,
        **({"Group size": group} if group is not None else {}),
        **args,
    }
    return kernel(name, ts, dur, corr=corr, stream=stream, **recorded)


DDP_ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def ddp_steps(marker: str | None) -> list[Event]:
    """Two steps, each with two backward all-reduces of 1000 then 500 floats (DDP's buckets)."""
    events: list[Event] = []
    for n, at in ((1, 0), (2, 1000)):
        events += [
            step(n, at, 1000),
            cpu_op("autograd::engine::evaluate_function: AddmmBackward0", at + 100, 300),
        ]
        if marker:
            events.append(span(marker, at + 10, 50, tid=1))
        for k, (size, start) in enumerate(((1000, 200), (500, 400))):
            corr = 10 * n + k
            events += [
                launch(corr, at + start - 90),
                collective(DDP_ALL_REDUCE, at + start, 50, corr, "allreduce", (size, size)),
            ]
    return events


def thread_name(tid: int, name: str) -> Event:
    return {
        "ph": "M",
        "name": "thread_name",
        "pid": PID,
        "tid": tid,
        "ts": 0,
        "args": {"name": name},
    }


def document(
    events: list[Event],
    rank: int | None = 0,
    world: int | None = 2,
    backend: str = "nccl",
    **extra: Any,
) -> dict[str, Any]:
    doc: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": []}
    if rank is not None:
        doc["distributedInfo"] = {"backend": backend, "rank": rank, "world_size": world}
    doc.update(extra)
    doc["traceEvents"] = events
    return doc


def write(path: Path, doc: Any, gz: bool | None = None) -> Path:
    data = json.dumps(doc, indent=1).encode()
    if gz if gz is not None else path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


# -- the two worked examples of the metric definitions (docs/metrics.md) -------------------------------


def gpu_example(group: int | None = None) -> list[Event]:
    """A kernel with no recorded launch (the previous, unprofiled step's) at [20,55); step 1:
    compute [50,80)+[80,130), NCCL all-reduce [70,140) (of `group` ranks, where given); step 2:
    compute [140,170), memcpy [170,175)."""
    return [
        step(1, 0, 100),
        step(2, 100, 100),
        launch(1, 10),
        launch(2, 20),
        launch(3, 30),
        launch(4, 110),
        launch(5, 120),
        kernel("volta_sgemm_128x64_nn", 50, 30, corr=1),
        kernel("void at::native::elementwise_kernel<128, 4>", 80, 50, corr=2),
        kernel(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            70,
            70,
            corr=3,
            stream=20,
            **{
                "Collective name": "allreduce",
                "In msg nelems": 1000,
                "Out msg nelems": 1000,
                "dtype": "Float",
                "Process Group Name": "0",
                "Seq": 12,
                **({"Group size": group} if group is not None else {}),
            },
        ),
        kernel("volta_sgemm_64x64_nt", 140, 30, corr=4),
        kernel("Memcpy DtoH (Device -> Pageable)", 170, 5, corr=5, cat="gpu_memcpy"),
        kernel("void at::native::reduce_kernel<512, 1>", 20, 35, corr=99),
    ]


def cpu_example() -> list[Event]:
    """A Gloo job: training thread 1, runloop thread 2, one step [0,100)."""
    return [
        thread_name(1, "thread 1 (python3)"),
        thread_name(2, "thread 2 (pt_gloo_runloop)"),
        step(7, 0, 100),
        cpu_op("aten::mm", 5, 20),
        cpu_op("aten::addmm", 6, 14),
        cpu_op("autograd::engine::evaluate_function: AccumulateGrad", 30, 30),
        cpu_op(
            "c10d::allreduce_", 40, 5, **{"Input Dims": [[[1000]]], "Input type": ["TensorList"]}
        ),
        cpu_op("aten::add", 62, 8),
        cpu_op("_c10d_functional::wait_tensor", 70, 10),
        cpu_op("aten::mul", 85, 10),
        span("gloo:all_reduce", 41, 34, tid=2, **{"Input Dims": [[1000]], "Input type": ["float"]}),
        span("gloo:all_reduce", 90, 20, tid=2),
    ]


# Parameters (Ψ) of the runs run_folder writes.
PSI = 1000


def run_folder(
    root: Path,
    name: str,
    *,
    strategy: str = "ddp",
    dp: int = 1,
    steps: list[float],
    profiled: tuple[int, ...] = (),
    precision: str = "fp32",
    events: list[Event] | None = None,
    threads: int | None = None,
) -> Path:
    """A run folder: rank 0's trace (`events`, else gpu_example; world size `dp`) and a run
    record with these step times (seconds, every step of the run; `profiled` the indices that
    were profiled), Ψ = PSI; `threads`: the intra-op threads its rank recorded."""
    folder = root / name
    folder.mkdir()
    write(folder / "rank0.json", document(events or gpu_example(group=dp), rank=0, world=dp))
    record: dict[str, Any] = {
        "record_version": 1,
        "strategy": strategy,
        "world_size": dp,
        "num_params": PSI,
        "config": {"precision": precision},
        "global_batch": {
            "micro_batch": 4,
            "dp": dp,
            "grad_accum": 1,
            "samples": 4 * dp,
            "tokens": 256 * dp,
        },
        "ranks": [
            {
                "rank": 0,
                "model_state_bytes": {"params": 1, "grads": 1, "optimizer": 1},
                "intra_op_threads": threads,
            }
        ],
        "step_seconds": steps,
        "profiled_steps": [{"run_step": i, "profiler_step": i} for i in profiled],
    }
    (folder / "run.json").write_text(json.dumps(record))
    return folder
