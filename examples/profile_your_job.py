"""Profile your own data-parallel job for traceview: a plain DDP training loop under
torch.profiler, one trace per rank in one folder (README "Profile your own job").

    torchrun --nproc_per_node=2 examples/profile_your_job.py --out traces/my-run
    traceview analyze traces/my-run

On GPUs it uses NCCL and profiles CUDA too; without one, CPU processes talk over Gloo.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, schedule

import traceview.profiler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="traces/my-run", help="folder for the rank traces")
    parser.add_argument("--store", help="also write each rank into this traceview store")
    parser.add_argument("--steps", type=int, default=6, help="training steps (at least 5)")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    layers = [m for _ in range(4) for m in (torch.nn.Linear(512, 512), torch.nn.ReLU())]
    model = DistributedDataParallel(
        torch.nn.Sequential(*layers).to(device),
        device_ids=[device.index] if cuda else None,
        bucket_cap_mb=1,  # several gradient buckets, to see them overlap the backward pass
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(
        activities=activities,
        # Steps 0 (skipped) and 1 (warm-up) are not kept; 2, 3 and 4 are: ProfilerStep#2..#4.
        schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
        record_shapes=True,  # message sizes of the collectives
        on_trace_ready=traceview.profiler.handler(args.out, store=args.store),
    ) as prof:
        for _ in range(args.steps):
            x = torch.randn(64, 512, device=device)
            loss = torch.nn.functional.mse_loss(model(x), x)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            prof.step()  # marks the step boundary traceview reads

    rank = dist.get_rank()
    dist.barrier()  # leave together: a rank tearing down the group while another talks aborts
    del model, optimizer  # DDP holds the group: free it first, or Gloo may abort at exit
    dist.destroy_process_group()
    if rank == 0:
        print(f"wrote {args.out}; now: traceview analyze {args.out}")


if __name__ == "__main__":
    main()
