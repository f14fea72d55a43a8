"""The overlap tax as advice (docs/findings.md `overlap_tax`): compute slowed beside
communication by more than a small share of the step, beyond the noise of its alone runs."""

from __future__ import annotations

import statistics

from traceview.analysis.finding import MATERIAL_SHARE, Finding, ms
from traceview.analysis.job import JobReport

# Fewer launch pairs than this say too little of a job's kernels to advise on.
MIN_PAIRS = 10


def overlap_tax(job: JobReport, name: str) -> Finding | None:
    """Said where the ranks whose tax is beyond noise lose a material share of their steps
    to it; the action depends on whether the tax or the exposed communication costs more."""
    measured = [r for r in job.ranks if r.overlap_tax is not None and r.overlap_tax.pairs]
    taxed = [r for r in measured if r.overlap_tax is not None and r.overlap_tax.beyond_noise]
    if not taxed:
        return None
    steps = [s.breakdown for r in taxed for s in r.steps if s.holds_work]
    window = sum(b.window_ns for b in steps)
    exposed = sum(b.exposed_comm_ns or 0 for b in steps)
    tax = sum(r.overlap_tax.tax_ns for r in taxed if r.overlap_tax is not None)
    pairs = sum(r.overlap_tax.pairs for r in taxed if r.overlap_tax is not None)
    if not steps or pairs < MIN_PAIRS or tax < MATERIAL_SHARE * window:
        return None
    slowdown = statistics.median(
        r.overlap_tax.slowdown[1]
        for r in taxed
        if r.overlap_tax is not None and r.overlap_tax.slowdown is not None
    )
    beside = sum(r.overlap_tax.beside_ns for r in taxed if r.overlap_tax is not None)
    paired = sum(r.overlap_tax.paired_ns for r in taxed if r.overlap_tax is not None)
    per_step, exposed_per_step = tax / len(steps), exposed / len(steps)
    if tax >= exposed:
        action = (
            "hidden communication is not free here: NCCL's kernels take SMs and memory "
            "bandwidth from the compute beside them, and that costs more than the exposed "
            "communication. Fewer NCCL CTAs (NCCL_MAX_CTAS on NCCL 2.17 and later, "
            "NCCL_MAX_NCHANNELS before) leave compute more SMs and make each collective "
            "slower: try a lower value and measure the tax and the exposed time again"
        )
    else:
        action = (
            "the exposed communication still costs more than the tax: shrink it first; fewer "
            "NCCL CTAs would lower the tax but slow the exposed part. Count the tax when "
            "judging how well communication is hidden"
        )
    return Finding(
        rule="overlap_tax",
        job=name,
        what=(
            f"compute beside communication ran a median {slowdown:.2f}× its time alone on "
            f"{len(taxed)} of {len(job.ranks)} ranks: {ms(per_step):,.3f} ms a rank-step "
            f"({100 * tax / window:.0f}% of the steps' time) over {pairs:,} launches, "
            f"{100 * paired / beside:.0f}% of the compute beside communication; counting it, "
            f"communication costs {ms(per_step + exposed_per_step):,.3f} ms a rank-step, not the "
            f"exposed {ms(exposed_per_step):,.3f} ms"
        ),
        action=action,
        numbers={
            "ranks_taxed": len(taxed),
            "ranks_measured": len(measured),
            "slowdown": round(slowdown, 3),
            "tax_ms_per_rank_step": ms(per_step),
            "tax_pct": round(100 * tax / window, 1),
            "exposed_ms_per_rank_step": ms(exposed_per_step),
            "pairs": pairs,
            "coverage_pct": round(100 * paired / beside, 1),
        },
    )
