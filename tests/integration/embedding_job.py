"""A user's own DDP script, as tutorials write it: an embedding registered first (so its
64 MiB gradient is ready last), a small bucket_cap_mb, torch.profiler with record_shapes and
tensorboard_trace_handler. Run under torchrun: `embedding_job.py OUT CAP_MB`."""

import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(16_384, 1_024)  # 64 MiB of fp32 gradient
        self.l1 = nn.Linear(1_024, 256)
        self.l2 = nn.Linear(256, 256)
        self.out = nn.Linear(256, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.emb(x).mean(1)
        return self.out(torch.relu(self.l2(torch.relu(self.l1(h)))))


def main() -> None:
    out, cap = sys.argv[1], float(sys.argv[2])
    dist.init_process_group("gloo")
    try:
        torch.manual_seed(0)
        torch.set_num_threads(1)
        model = DistributedDataParallel(Model(), bucket_cap_mb=cap)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        with profile(
            activities=[ProfilerActivity.CPU],
            record_shapes=True,
            schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
            on_trace_ready=tensorboard_trace_handler(out),
        ) as prof:
            for _ in range(6):
                x = torch.randint(0, 16_384, (32, 16))
                loss = model(x).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
                prof.step()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
