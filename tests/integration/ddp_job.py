"""A small real DDP job on CPU/Gloo, launched by tests with torchrun; one trace per rank.

Usage: torchrun --nproc_per_node=2 tests/integration/ddp_job.py OUT_DIR
"""

import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, schedule

WAIT, WARMUP, ACTIVE = 1, 1, 3


def main(out: Path) -> None:
    dist.init_process_group("gloo")
    try:
        rank = dist.get_rank()
        torch.manual_seed(0)
        model = torch.nn.Sequential(*(torch.nn.Linear(256, 256) for _ in range(8)))
        ddp = DistributedDataParallel(model, bucket_cap_mb=0.5)
        opt = torch.optim.AdamW(ddp.parameters())
        trace = out / f"rank{rank}.json.gz"
        with profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
            on_trace_ready=lambda p: p.export_chrome_trace(str(trace)),
            record_shapes=True,
        ) as prof:
            for _ in range(WAIT + WARMUP + ACTIVE):
                x = torch.randn(64, 256)
                ddp(x).square().mean().backward()
                opt.step()
                opt.zero_grad()
                prof.step()
        if rank == 0:
            num_params = sum(p.numel() for p in model.parameters())
            steps = list(range(WAIT + WARMUP, WAIT + WARMUP + ACTIVE))
            (out / "job.json").write_text(json.dumps({"num_params": num_params, "steps": steps}))
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
