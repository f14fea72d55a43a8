"""A user's DDP script profiled with traceview's own handler into a store, packing the job once
its last rank is stored from PACK_FROM ranks. Run under torchrun:

    handler_job.py TRACES STORE PACK_FROM"""

import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, schedule

import traceview.profiler


def main() -> None:
    traces, store, pack_from = sys.argv[1], sys.argv[2], int(sys.argv[3])
    dist.init_process_group("gloo")
    try:
        torch.manual_seed(0)
        torch.set_num_threads(1)
        model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(128, 128)))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        ready = traceview.profiler.handler(traces, store=store, pack_from=pack_from)
        with profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
            on_trace_ready=ready,
        ) as prof:
            for _ in range(6):
                model(torch.randn(32, 128)).sum().backward()
                opt.step()
                opt.zero_grad()
                prof.step()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
