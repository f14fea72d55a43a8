"""The findings on gradient buckets (docs/findings.md): the backward tail, buckets too small for
the link, and when neither is judged. Both rest on transfer time: where waiting for late ranks is
most of the gradient collectives' time, neither is said (the straggler is the finding), and the
two are never said together, as one says smaller buckets and the other larger."""

from __future__ import annotations

import polars as pl

from traceview.analysis.buckets import GRADIENT_COLLECTIVES
from traceview.analysis.finding import MATERIAL_SHARE, Finding, ms, traced_of, window_ns
from traceview.analysis.fits import AlphaBetaFit, mebibytes
from traceview.analysis.job import JobReport
from traceview.analysis.last_bucket import LastBucket, last_bucket
from traceview.strategies import STRATEGIES

# The backward tail: this share of the exposed gradient communication ends after backward.
TAIL_SHARE = 0.5
# Waiting for late ranks from this share of the gradient collectives' time: bucket advice,
# which rests on transfer, is withheld.
WAITING_SHARE = 0.5
# The last gradient is most of its bucket from this share.
ONE_TENSOR_SHARE = 0.5
# A tail within this share of its floor is at it: a lower cap would not shorten it by more.
FLOOR_ROOM = 0.2


def waiting_share(job: JobReport) -> float | None:
    """Of the gradient collectives' time, the share spent waiting for the last rank to arrive;
    None where the ranks are not aligned (no wait is known)."""
    if not job.aligned:
        return None
    grads = job.calls.filter(
        pl.col("collective").is_in(GRADIENT_COLLECTIVES) & pl.col("wait_ns").is_not_null()
    )
    wait = int(grads["wait_ns"].sum() or 0)
    busy = wait + int(grads["transfer_ns"].sum() or 0)
    return wait / busy if busy else None


def backward_tail(
    job: JobReport, name: str, strategy: str | None, small: Finding | None
) -> Finding | None:
    """Exposed gradient transfer that runs after the backward pass's compute ended: the last
    buckets (or FSDP units) leave too late to hide behind anything. `small`: the small_buckets
    finding, whose opposite advice (larger buckets) this one then must not contradict."""
    late = _gradient_exposure(job)
    exposed = int(late["exposed"].sum())
    tail = int(late.filter("late")["exposed"].sum())
    window = window_ns(job)
    if not window or exposed < MATERIAL_SHARE * window or tail < TAIL_SHARE * exposed:
        return None
    steps = sum(len(r.backward_tails) for r in job.ranks)
    per_step = tail / steps
    by_module = (
        late.filter(pl.col("late") & pl.col("module").is_not_null())
        .group_by("module")
        .agg(pl.col("exposed").sum())
        .sort("exposed", "module", descending=[True, False])
    )
    unit = by_module["module"][0] if by_module.height else None
    spec = STRATEGIES.get(strategy or "")
    fsdp = unit is not None or (spec is not None and not spec.ddp_buckets)
    on = "transfer" if job.aligned else "whole-call"
    what = (
        f"{100 * tail / exposed:.0f}% of the exposed gradient communication ({on} time) runs "
        f"after the backward pass ends ({_ms_said(per_step)} per rank and step, "
        f"{100 * tail / window:.0f}% of the step time)"
    )
    numbers: dict[str, float | int | str] = {
        "tail_exposed_ms_per_step": ms(per_step),
        "tail_share_pct": round(100 * tail / exposed, 1),
        "step_time_share_pct": round(100 * tail / window, 1),
    }
    if fsdp:
        which = f"unit {unit}" if unit else "the last unit"
        return Finding(
            rule="backward_tail",
            job=name,
            what=what + (f", most of it FSDP unit {unit}'s" if unit else ""),
            action=(
                f"FSDP reduces {which}'s gradients only once all of them are ready: give its "
                "large parameters (embeddings, the output layer) fully_shard units of their "
                "own, so less is left to reduce after the last gradient is computed"
            ),
            numbers={**numbers, **({"last_unit": unit} if unit else {})},
        )
    held = last_bucket(job)
    said, facts = _what_it_holds(held, per_step)
    world = traced_of(job)[1]
    return Finding(
        rule="backward_tail",
        job=name,
        what=what + said,
        action=_ddp_tail_action(held, per_step, world, small),
        numbers={**numbers, **facts},
    )


Numbers = dict[str, float | int | str]


def _what_it_holds(held: LastBucket | None, tail_ns: float) -> tuple[str, Numbers]:
    """The last bucket and its last gradient, in words and numbers; without shapes, only a last
    bucket out of line with the others."""
    if held is not None and held.gradient_bytes is None and held.outsized:
        assert held.others_bytes is not None
        return (
            f"; the last bucket ({mebibytes(held.bucket_bytes)}) is "
            f"{held.bucket_bytes / held.others_bytes:.0f}× the step's largest other "
            "(no gradient shapes recorded)"
        ), {
            "last_bucket_mib": _mib(held.bucket_bytes),
            "largest_other_bucket_mib": _mib(held.others_bytes),
        }
    if held is None or held.gradient_share is None or held.floor_ns is None:
        return "", {}
    assert held.gradient_bytes is not None
    share = held.gradient_share
    numbers: Numbers = {
        "last_bucket_mib": _mib(held.bucket_bytes),
        "last_gradient_mib": _mib(held.gradient_bytes),
        "last_gradient_share_pct": round(100 * share, 1),
        "floor_ms_per_step": ms(held.floor_ns),
        "floor_on": held.on,
        "rank_steps": held.gradients_known,
    }
    floor = _ms_said(held.floor_ns)
    if share >= ONE_TENSOR_SHARE:
        said = (
            f"; the last bucket ({mebibytes(held.bucket_bytes)}) is {100 * share:.0f}% one "
            f"gradient of {mebibytes(held.gradient_bytes)}, the last made ready (the first "
            "parameter registered, usually an embedding): DDP never splits a tensor, so no "
            f"bucket_cap_mb takes its reduce below about {floor}, the tail's floor"
        )
    else:
        said = (
            f"; the last gradient made ready ({mebibytes(held.gradient_bytes)}) is "
            f"{100 * share:.0f}% of the last bucket ({mebibytes(held.bucket_bytes)}): the "
            f"tail's floor is about {floor}"
        )
    said += f" (from the shapes of {held.gradients_known} rank-steps, on {held.on} time)"
    if _at_floor(held, tail_ns):
        said += "; the tail is at its floor"
    return said, numbers


def _at_floor(held: LastBucket | None, tail_ns: float) -> bool:
    floor = held.floor_ns if held is not None else None
    return floor is not None and tail_ns - floor <= FLOOR_ROOM * tail_ns


def _ddp_tail_action(
    held: LastBucket | None, tail_ns: float, world: int, small: Finding | None
) -> str:
    """A lower bucket_cap_mb where it can shorten the tail; else what shortens the last
    gradient's own reduce, leaving out what the job already does."""
    one_tensor = held is not None and (held.gradient_share or 0) >= ONE_TENSOR_SHARE
    unknown = held is None or held.gradient_bytes is None
    if unknown and held is not None and held.outsized and small is None:
        return (
            "a bucket this far above the others may hold one gradient larger than "
            "bucket_cap_mb, which DDP never splits and no lower cap shortens: profile with "
            "record_shapes=True and traceview says what it holds; if it holds many, a lower "
            "bucket_cap_mb lets them leave while backward still computes"
        )
    if not one_tensor and not _at_floor(held, tail_ns) and small is None:
        return (
            "the last gradient buckets start too late to hide: make them smaller "
            "(a lower bucket_cap_mb) so they leave while backward still computes"
        )
    if small is not None and not one_tensor and not _at_floor(held, tail_ns):
        head = (
            "the gradient messages are already below the size the link needs (the α-β fit: a "
            "line through call time against size), so a lower bucket_cap_mb would cost in "
            "transfer what it hides; shorten the last reduce instead: "
        )
    elif _at_floor(held, tail_ns):
        head = "the tail is at its floor, which no bucket_cap_mb shortens; its last gradient's "
        head += "reduce can be shortened: "
    else:
        assert held is not None and held.floor_ns is not None
        head = (
            "no bucket_cap_mb shortens the last gradient's own reduce (a lower cap could at "
            f"most take the tail down to it, {_ms_said(tail_ns - held.floor_ns)} less); what "
            "does: "
        )
    ways = []
    if held is None or held.element_bytes is None or held.element_bytes > 2:
        ways.append(
            "reduce in bf16 with a DDP communication hook (register_comm_hook(dist.group.WORLD, "
            "bf16_compress_hook), torch.distributed.algorithms.ddp_comm_hooks.default_hooks): "
            "half the bytes of every bucket, if the gradients tolerate 16-bit reduction"
        )
    ways.append(
        "if the last gradient made ready is an embedding's and a batch touches few of its rows, "
        "nn.Embedding(..., sparse=True) reduces only those rows (with an optimizer that takes "
        "sparse gradients: SGD, SparseAdam)"
    )
    if world >= 2:
        ways.append(
            "or give its module a fully_shard (FSDP2) unit of its own: a reduce-scatter puts "
            "(N−1)/N of its bytes on the wire per rank, an all-reduce 2(N−1)/N"
        )
    return head + "; ".join(ways)


def _ms_said(ns: float) -> str:
    """A time in ms with three significant digits (a floor of 40 µs is not "0.0 ms")."""
    value = ns / 1e6
    return f"{value:,.0f} ms" if value >= 100 else f"{value:.3g} ms"


def _mib(size: float) -> float:
    return round(size / 2**20, 3)


def _gradient_exposure(job: JobReport) -> pl.DataFrame:
    """exposed, late, module: each gradient collective of a step whose backward end is known,
    its share of the exposed time (concurrent calls counted once) — no more than its transfer
    time where the ranks are aligned (waiting for a late rank is not the bucket's) — and
    whether it ended after the backward pass's compute; all ranks in one frame, the job's
    (a frame per rank costs seconds at 1,024 ranks)."""
    schema = {"exposed": pl.Int64, "late": pl.Boolean, "module": pl.String}
    ends = [(r.rank, t.step, t.backward_end_ns) for r in job.ranks for t in r.backward_tails]
    if not ends:
        return pl.DataFrame(schema=schema)
    if all(r.rank is not None for r in job.ranks):
        calls = job.calls  # every rank's, with its transfer time where the ranks are aligned
    else:  # a lone trace that does not say its rank
        calls = pl.concat([r.calls for r in job.ranks], how="vertical_relaxed")
        calls = calls.with_columns(transfer_ns=pl.lit(None, pl.Int64))
    backward = pl.DataFrame(
        ends,
        schema={"rank": calls.schema["rank"], "step": pl.Int64, "backward_end_ns": pl.Int64},
        orient="row",
    )
    grads = calls.filter(pl.col("backward") & pl.col("collective").is_in(GRADIENT_COLLECTIVES))
    exposed = pl.col("exposed_share_ns").fill_null(0)
    if job.aligned:
        exposed = pl.min_horizontal(exposed, pl.col("transfer_ns").fill_null(exposed))
    joined = grads.join(backward, on=["rank", "step"], nulls_equal=True)
    return joined.select(
        exposed=exposed,
        late=pl.col("end_ns") > pl.col("backward_end_ns"),
        module=pl.col("module").cast(pl.String),
    ).cast(schema)  # type: ignore[arg-type]


def small_buckets(job: JobReport, name: str, strategy: str | None = None) -> Finding | None:
    """Gradient messages below the size at which the fitted α costs 10 % of the time (only
    from fits trusted to size anything: see analysis/fits.py). Sizes in MiB, the unit of
    bucket_cap_mb, in words and numbers alike."""
    for fit in job.fits:
        if fit.collective not in GRADIENT_COLLECTIVES or not fit.trusted:
            continue
        target, median = fit.size_for_90pct_bytes, fit.median_bytes
        if target is None or median is None or median >= target:
            continue
        suggest = fit.step_bytes if fit.one_bucket and fit.step_bytes else target
        return Finding(
            rule="small_buckets",
            job=name,
            what=(
                f"{fit.collective} messages have a median of {mebibytes(median)}; "
                f"{mebibytes(target)} or more reach 90% of the fitted bandwidth "
                f"({fit.bandwidth_gbps or 0:,.2f} GB/s, fixed cost per call α "
                f"{fit.alpha_us or 0:,.0f} µs; "
                f"confidence {fit.confidence}: {fit.why}; on {fit.on} times)"
            ),
            action=_larger_messages(strategy, suggest, fit),
            numbers={
                "median_mib": _mib(median),
                "size_for_90pct_mib": _mib(target),
                "suggested_mib": _mib(suggest),
                "bandwidth_gbps": round(fit.bandwidth_gbps or 0, 3),
                "alpha_us": round(fit.alpha_us or 0, 1),
                "confidence": fit.confidence,
                "size_clusters": fit.size_clusters,
                "fitted_on": fit.on,
            },
        )
    return None


def _larger_messages(strategy: str | None, size: float, fit: AlphaBetaFit) -> str:
    """How a run makes its gradient messages larger: DDP's buckets, or FSDP's units; at most
    one message per step (what a step sends in all)."""
    spec = STRATEGIES.get(strategy or "")
    whole = (
        " — one for all of a step's gradients, which leaves nothing to overlap"
        if fit.one_bucket
        else ""
    )
    if spec is not None and not spec.ddp_buckets:
        return (
            f"larger messages: fewer, larger FSDP units (fully_shard over bigger modules), "
            f"about {mebibytes(size)} each or more{whole}"
        )
    return f"larger buckets: bucket_cap_mb of about {size / 2**20:,.3g} or more{whole}"


def waiting(job: JobReport, name: str, share: float) -> Finding:
    """Waiting for late ranks is most of the gradient collectives' time, and no one rank causes
    most of it: bucket advice is withheld, and the waiting is the finding."""
    cross = job.cross_rank
    assert cross is not None
    caused = sorted(cross.ranks, key=lambda a: (-a.caused_wait_ns, a.rank))
    waited = sum(a.wait_ns for a in cross.ranks) or 1
    top = ", ".join(
        f"rank {a.rank} {100 * a.caused_wait_ns / waited:.0f}%"
        for a in caused[:3]
        if a.caused_wait_ns
    )
    return Finding(
        rule="waiting",
        job=name,
        what=(
            f"the ranks spend {100 * share:.0f}% of their gradient collectives' time waiting "
            f"for late ranks; of that waiting, caused by: {top}"
        ),
        action=(
            "bucket advice is withheld: it rests on transfer time, and here the time goes to "
            "waiting; make the ranks arrive together: look at what differs between them from "
            "step to step (data loading, inputs of uneven size, the hosts' other work)"
        ),
        numbers={"wait_pct": round(100 * share, 1)},
    )
