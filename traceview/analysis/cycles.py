"""One rank profiled in several cycles — torch.profiler's schedule starts a new cycle after each
`active` stretch (its default `repeat=0` repeats until the loop ends), and
tensorboard_trace_handler writes each cycle's trace to a file of its own — read as one rank: its
steps as recorded, its totals the sum of its cycles', the unprofiled time between cycles in no
step and no total (docs/metrics.md "Profiling cycles")."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import msgspec
import polars as pl

from traceview.analysis.breakdown import Breakdown
from traceview.analysis.call_totals import CollectiveSummary
from traceview.analysis.rank import RankReport
from traceview.analysis.windows import BeforeFirstStep
from traceview.errors import Note


def holds_work(report: RankReport) -> bool:
    """Whether any of the trace's steps holds compute: a cycle cut short as the loop ended
    holds only the step the profiler opened at the last `prof.step()`, empty."""
    return any(s.holds_work for s in report.steps)


def step_range(report: RankReport) -> str:
    steps = [s.step for s in report.steps]
    if not steps:
        return "no steps"
    return f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}–{steps[-1]}"


def _first_start(report: RankReport) -> int:
    return report.total.start_ns if report.total is not None else 0


def joined(cycles: Sequence[RankReport], set_aside: Sequence[RankReport] = ()) -> RankReport:
    """The reports of one rank's cycles as one (each a trace of the same process, none
    overlapping another in time or steps); `set_aside`: its cycles that hold no work, named in
    a note."""
    ordered = sorted(cycles, key=_first_start)
    first = ordered[0]
    names = ", ".join(f"{r.trace.name} ({step_range(r)})" for r in ordered)
    notes = [
        Note(
            message=f"profiled in {len(ordered)} cycles, each its own trace: {names}; the time "
            "between cycles was not profiled and is in no step and no total"
        )
    ]
    notes += [
        Note(
            message=f"{r.trace.name} set aside: it holds no complete step ({step_range(r)} "
            "without work: the step the profiler opened as the loop ended)"
        )
        for r in set_aside
    ]
    seen = {n.message for n in notes}
    for r in ordered:
        for n in r.notes:
            if n.message not in seen:
                seen.add(n.message)
                notes.append(n)
    spans = [r.epoch_span_ns for r in ordered if r.epoch_span_ns is not None]
    return msgspec.structs.replace(
        first,
        size_bytes=sum(r.size_bytes for r in ordered),
        truncated=any(r.truncated for r in ordered),
        notes=tuple(notes),
        total=_summed([r.total for r in ordered]),
        steps=tuple(s for r in ordered for s in r.steps),
        before_first_step=_before_summed([r.before_first_step for r in ordered]),
        collectives=_collectives([c for r in ordered for c in r.collectives]),
        epoch_span_ns=(min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None,
        calls=_calls([r.calls for r in ordered]),
        backward_tails=tuple(t for r in ordered for t in r.backward_tails),
        intervals=_concat([r.intervals for r in ordered]),
        work=_concat([r.work for r in ordered]),
        wrappers=tuple(dict.fromkeys(w for r in ordered for w in r.wrappers)),
        idle_where=tuple(i for r in ordered for i in r.idle_where),
        devices=next((r.devices for r in ordered if r.devices), ()),
        gradients=tuple(g for r in ordered for g in r.gradients),
    )


def _summed(parts: Sequence[Breakdown | None]) -> Breakdown | None:
    """Windows one after another, as one: each figure summed (unknown where any is), the
    time between them a gap."""
    known = sorted((b for b in parts if b is not None), key=lambda b: b.start_ns)
    if not known:
        return None

    def total(field: str) -> int | None:
        values = [getattr(b, field) for b in known]
        return None if None in values else sum(values)

    between = sum(max(0, b.start_ns - a.end_ns) for a, b in itertools.pairwise(known))
    return Breakdown(
        start_ns=known[0].start_ns,
        end_ns=max(b.end_ns for b in known),
        compute_ns=sum(b.compute_ns for b in known),
        comm_ns=total("comm_ns"),
        overlap_ns=total("overlap_ns"),
        exposed_comm_ns=total("exposed_comm_ns"),
        compute_only_ns=total("compute_only_ns"),
        idle_ns=total("idle_ns"),
        gaps_ns=sum(b.gaps_ns for b in known) + between,
    )


def _before_summed(parts: Sequence[BeforeFirstStep | None]) -> BeforeFirstStep | None:
    """Each cycle's kernels launched before it began, together."""
    known = [b for b in parts if b is not None]
    breakdown = _summed([b.breakdown for b in known])
    if breakdown is None:
        return None
    return BeforeFirstStep(
        kernels=sum(b.kernels for b in known),
        breakdown=breakdown,
        memcpy=sum(b.memcpy for b in known),
        memset=sum(b.memset for b in known),
    )


def _collectives(parts: Sequence[CollectiveSummary]) -> tuple[CollectiveSummary, ...]:
    by_name: dict[str, list[CollectiveSummary]] = {}
    for c in parts:
        by_name.setdefault(c.collective, []).append(c)
    out = []
    for name, same in by_name.items():
        sized = [c.bytes for c in same if c.bytes is not None]
        out.append(
            CollectiveSummary(
                collective=name,
                count=sum(c.count for c in same),
                total_ns=sum(c.total_ns for c in same),
                bytes=sum(sized) if sized else None,
                bytes_known=sum(c.bytes_known for c in same),
            )
        )
    return tuple(sorted(out, key=lambda c: -c.total_ns))


def _calls(parts: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """The cycles' calls in order, numbered on from one cycle to the next."""
    out, offset = [], 0
    for calls in parts:
        out.append(calls.with_columns(pl.col("index") + offset))
        if calls.height:
            offset += int(calls["index"].max()) + 1  # type: ignore[arg-type]
    return pl.concat(out)


def _concat(parts: Sequence[pl.DataFrame | None]) -> pl.DataFrame | None:
    kept = [p for p in parts if p is not None]
    return pl.concat(kept) if len(kept) == len(parts) else None
