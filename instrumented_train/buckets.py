"""DDP's gradient bucket layout: which parameters each bucket (one all-reduce) carries."""

from __future__ import annotations

from instrumented_train.strategies import Parallel
from traceview.parse.run_record import Bucket


def ddp_buckets(par: Parallel) -> list[Bucket] | None:
    """Bucket index -> parameter names and bytes, as DDP rebuilt them after the first steps
    (in gradient-ready order). None when DDP has not reported its layout."""
    if par.ddp is None:
        return None
    data = par.ddp._get_ddp_logging_data()
    indices = str(data.get("rebuilt_per_bucket_param_indices") or "")
    sizes = str(data.get("rebuilt_bucket_sizes") or "")
    if not indices or not sizes:
        return None
    names = [name for name, p in par.module.named_parameters() if p.requires_grad]
    buckets = []
    for i, (members, size) in enumerate(zip(indices.split(","), sizes.split(","), strict=True)):
        buckets.append(
            Bucket(index=i, bytes=int(size), params=[names[int(j)] for j in members.split()])
        )
    return buckets
