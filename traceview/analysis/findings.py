"""Findings: rules over a job's analysis that say, in plain words, what to change, each with the
numbers it came from (docs/findings.md). A rule that cannot be judged (no steps, no sizes, one
rank) stays silent rather than guess."""

from __future__ import annotations

import msgspec
import polars as pl

from traceview.analysis.bucket_findings import (
    WAITING_SHARE,
    backward_tail,
    small_buckets,
    waiting,
    waiting_share,
)
from traceview.analysis.finding import MATERIAL_SHARE, Finding, ms, traced_of, window_ns
from traceview.analysis.job import JobReport
from traceview.analysis.straggler_findings import rotating_stragglers, straggler
from traceview.analysis.tax_findings import overlap_tax
from traceview.plain import noun

# ZeRO-3: all-gathers count as not overlapped when this share of their time is exposed.
GATHER_EXPOSED_SHARE = 0.5
# Messages this large reach most of a healthy link's bandwidth (nccl-tests' busbw flattens out
# above a few MB); below this share of the link's peak they are far from it.
LARGE_MESSAGE_BYTES = 8 << 20
SLOW_LINK_SHARE = 0.25
# A GPU idle for more than this share of its steps' windows is waiting on something.
IDLE_SHARE = 0.30
NO_FINDINGS = "no findings: no rule found anything to change (docs/findings.md)"


def unhidden_gathers(job: JobReport, name: str, strategy: str | None) -> Finding | None:
    """ZeRO-3's parameter all-gathers waited for instead of prefetched."""
    if strategy != "zero3":
        return None
    gathers = job.calls.filter(pl.col("collective") == "all_gather")
    total = int(gathers["dur_ns"].sum() or 0)
    exposed = int(gathers["exposed_ns"].sum() or 0)  # per call, as their durations are
    # Of the step time: concurrent gathers counted once.
    alone = int(gathers["exposed_share_ns"].sum() or 0)
    window = window_ns(job)
    if not total or not window:
        return None
    if exposed < GATHER_EXPOSED_SHARE * total or alone < MATERIAL_SHARE * window:
        return None
    return Finding(
        rule="unhidden_gathers",
        job=name,
        what=(
            f"{100 * exposed / total:.0f}% of ZeRO-3's all-gather time is exposed "
            f"({100 * alone / window:.0f}% of the step time)"
        ),
        action=(
            "prefetch the next module's parameters (FSDP2: set_modules_to_forward_prefetch / "
            "set_modules_to_backward_prefetch), or keep them between forward and backward "
            "(reshard_after_forward=False, ZeRO-2) if memory allows"
        ),
        numbers={
            "gather_exposed_pct": round(100 * exposed / total, 1),
            "step_time_share_pct": round(100 * alone / window, 1),
        },
    )


# Where a GPU's idle time sits, and what usually puts it there.
_IDLE_CAUSES = {
    "among_kernels": (
        "between the kernels of a pass",
        "host-side launch overhead: kernels too short to keep the GPU busy (larger batches, "
        "CUDA graphs, torch.compile)",
    ),
    "after_last_collective": (
        "after the last collective",
        "host work or synchronisation once the gradients are reduced (the optimizer step, "
        "gradient clipping or logging that calls .item(), a barrier)",
    ),
    "between_passes": (
        "between forward and backward",
        "host work between the passes (the loss, .item(), logging)",
    ),
}


def gpu_idle(job: JobReport, name: str) -> Finding | None:
    """A GPU idle for a large part of each step: where the idle time sits, and its usual
    causes, largest first."""
    parts = [w for r in job.ranks for w in r.idle_where]
    if not parts:
        return None
    steps = [s.breakdown for r in job.ranks if r.idle_where for s in r.steps]
    window = sum(b.window_ns for b in steps)
    idle = sum(b.idle_ns or 0 for b in steps)
    training = any(b.compute_ns for b in steps)  # steps that only communicate train nothing
    if not window or not training or idle <= IDLE_SHARE * window:
        return None
    where = {
        part: sum(getattr(w, f"{part}_ns") for w in parts) for part in _IDLE_CAUSES
    }  # fmt: skip
    inside = sum(where.values()) or 1
    order = sorted(where, key=where.__getitem__, reverse=True)
    said = ", ".join(
        f"{100 * where[p] / inside:.0f}% {_IDLE_CAUSES[p][0]}"
        for p in order
        if where[p] >= 0.005 * inside
    )
    before = sum(w.before_first_kernel_ns for w in parts) / len(parts)
    causes = [_IDLE_CAUSES[p][1] for p in order if where[p] >= 0.1 * inside]
    if before >= 0.1 * idle / len(parts):
        causes.append(
            "before each step's first kernel, data loading or host work at the step's start "
            "(more DataLoader workers, pin_memory, prefetching)"
        )
    return Finding(
        rule="gpu_idle",
        job=name,
        what=(
            f"the GPU is idle {100 * idle / window:.0f}% of its steps' time ({len(parts)} "
            f"rank-steps): {said}; and it waits {ms(before):,.1f} ms before each step's first "
            "kernel"
        ),
        action="the GPU waits on the host: " + "; ".join(causes),
        numbers={
            "idle_pct": round(100 * idle / window, 1),
            **{f"{p}_pct": round(100 * where[p] / inside, 1) for p in _IDLE_CAUSES},
            "before_first_kernel_ms_per_step": ms(before),
        },
    )


def desync(job: JobReport, name: str) -> Finding | None:
    """A rank lacking a collective the others ran, calls that differ at one sequence number or
    step, or a rank that stops joining while its trace goes on: what hangs a job."""
    found = job.desync
    signs = [s for s in found.signs if s.hang_or_desync] if found is not None else []
    if not signs:
        return None
    first = signs[0]
    more = (
        f" ({len(signs) - 1} more {noun(len(signs) - 1, 'sign')}: `traceview ranks`)"
        if len(signs) > 1
        else ""
    )
    return Finding(
        rule="desync",
        job=name,
        what=f"the ranks' collectives do not line up: {first.said}{more}",
        action=(
            "a rank that skips, adds or resizes a collective hangs the job or corrupts its "
            "result: look for a code path only some ranks take (a condition on the rank or its "
            "data, an early exit, an uneven number of batches per rank); PyTorch's Flight "
            "Recorder (TORCH_NCCL_TRACE_BUFFER_SIZE) records each rank's calls while it runs"
        ),
        numbers={
            "signs": len(signs),
            "rank": first.rank,
            "group": first.pg,
            "kind": first.kind,
            **({"seq": first.seq} if first.seq is not None else {}),
            **({"step": first.step} if first.step is not None else {}),
            **({"others_ms": ms(first.others_dur_ns)} if first.others_dur_ns is not None else {}),
        },
    )


def slow_link(job: JobReport, name: str) -> Finding | None:
    """Large messages far below the peak of the link they ran on (on transfer times: a lower
    bound proves nothing)."""
    link, _ = job.link
    if link is None or not job.aligned:
        return None
    large = job.calls.filter(
        (pl.col("bytes") >= LARGE_MESSAGE_BYTES)
        & pl.col("busbw_gbps").is_not_null()
        & (pl.col("bandwidth_on") == "transfer")
    )
    if large.height == 0:
        return None
    by_kind = large.group_by("collective").agg(n=pl.len(), busbw=pl.col("busbw_gbps").median())
    kind, n, busbw = by_kind.sort("n", descending=True).row(0)
    if busbw >= SLOW_LINK_SHARE * link.gbps:
        return None
    return Finding(
        rule="slow_link",
        job=name,
        what=(
            f"large {kind} messages (≥ {LARGE_MESSAGE_BYTES >> 20} MiB: {n} calls) reach a median "
            f"{busbw:,.1f} GB/s bus bandwidth, {100 * busbw / link.gbps:.0f}% of {link.name}'s "
            f"{link.gbps:,.0f} GB/s per direction ({link.scope}: {link.basis})"
        ),
        action=(
            "run nccl-tests (all_reduce_perf) on these GPUs to see what the link gives; if it "
            "gives more, look at what NCCL chose (NCCL_DEBUG=INFO names the transport: NVLink, "
            "PCIe or sockets — e.g. NCCL_P2P_DISABLE set, a container without the GPUs' links) "
            "and at other traffic sharing the link"
        ),
        numbers={
            "collective": kind,
            "calls": n,
            "busbw_gbps": round(busbw, 2),
            "peak_gbps": link.gbps,
            "peak_pct": round(100 * busbw / link.gbps, 1),
        },
    )


# The rules whose advice depends on the job's strategy.
_BY_STRATEGY = ("backward_tail", "small_buckets", "unhidden_gathers")


def _bucket_findings(job: JobReport, name: str, strategy: str | None) -> list[Finding | None]:
    """The bucket rules, never both: one says smaller buckets, the other larger, and the tail,
    measured, is said."""
    small = small_buckets(job, name, strategy)
    tail = backward_tail(job, name, strategy, small)
    return [tail] if tail is not None else [small]


def job_findings(job: JobReport, name: str) -> list[Finding]:
    """Every rule's finding. Each says what it rests on where a reader could not tell: advice
    that rests on an inferred strategy names it; a job with fewer traces than ranks says so."""
    of = job.strategy_of
    late = straggler(job, name)
    turns = None if late else rotating_stragglers(job, name)
    share = waiting_share(job)
    buckets: list[Finding | None]
    if share is None or share < WAITING_SHARE:
        buckets = _bucket_findings(job, name, of.name)
    elif late or turns:
        # The bucket rules rest on transfer time: withheld, and the late ranks' finding says so.
        withheld = (
            f"; until they arrive together, bucket advice is withheld: {100 * share:.0f}% of "
            "the gradient collectives' time is waiting, not transfer"
        )
        late = late and msgspec.structs.replace(late, action=late.action + withheld)
        turns = turns and msgspec.structs.replace(turns, action=turns.action + withheld)
        buckets = []
    else:
        buckets = [waiting(job, name, share)]
    found: list[Finding | None] = [*buckets]
    found += [
        unhidden_gathers(job, name, of.name),
        desync(job, name),
        late,
        turns,
        slow_link(job, name),
        gpu_idle(job, name),
        overlap_tax(job, name),
    ]
    traced, world = traced_of(job)
    out = []
    for f in found:
        if f is None:
            continue
        if of.source == "inferred" and of.name and f.rule in _BY_STRATEGY:
            f = msgspec.structs.replace(
                f,
                what=f"{f.what} ({of.name} inferred from the traces)",
                numbers={**f.numbers, "strategy": of.name, "strategy_source": of.source},
            )
        if traced < world:
            f = msgspec.structs.replace(
                f,
                what=f"{f.what} (from {traced} of {world} ranks)",
                numbers={**f.numbers, "ranks_traced": traced, "world_size": world},
            )
        out.append(f)
    return out
