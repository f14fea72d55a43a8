"""A user's DDP script profiled the way the PyTorch tutorials show: torch.profiler's schedule
(wait=1, warmup=1, active=4) with tensorboard_trace_handler, which writes a trace per rank and
profiling cycle named `<host>_<pid>.<ns>.pt.trace.json`. Run under torchrun:

    tutorial_job.py OUT REPEAT ITERATIONS [per-rank]

REPEAT 0 is the schedule's default (cycles until the loop ends); `per-rank`: each rank writes
into OUT/rank<R>/ instead of OUT."""

import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler


def main() -> None:
    out, repeat, iterations = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    dist.init_process_group("gloo")
    try:
        if sys.argv[4:] == ["per-rank"]:
            out = out / f"rank{dist.get_rank()}"
        torch.manual_seed(0)
        torch.set_num_threads(1)
        layers = (torch.nn.Linear(256, 256) for _ in range(4))
        model = DistributedDataParallel(torch.nn.Sequential(*layers))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        with profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=1, warmup=1, active=4, repeat=repeat),
            on_trace_ready=tensorboard_trace_handler(str(out)),
        ) as prof:
            for _ in range(iterations):
                model(torch.randn(64, 256)).sum().backward()
                opt.step()
                opt.zero_grad()
                prof.step()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
