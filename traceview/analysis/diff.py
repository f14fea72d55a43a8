"""Two runs compared, communication first (docs/metrics.md "Diff"): where a step's time went
between run A and run B. Every figure is a mean per rank and profiler step, so the parts of the
step add up: window = compute + exposed communication + idle, and the change in the window is the
sum of the changes of its parts. Each change is judged against the runs' own step-to-step
spread: within noise when it is smaller than twice the standard error of the difference of the
two means (about a 95 % interval)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Container

import msgspec
import polars as pl

from traceview.analysis.job import JobReport

TOP_KERNELS = 10  # the kernels (or CPU ops) whose time changed most


class Change(msgspec.Struct, frozen=True, kw_only=True):
    what: str
    before: float  # run A: the mean per rank and step (ms, or calls, or MB)
    after: float  # run B
    noise: float | None  # twice the standard error of the difference; None where unknown

    @property
    def change(self) -> float:
        return self.after - self.before

    @property
    def change_pct(self) -> float | None:
        return 100 * self.change / self.before if self.before else None

    @property
    def within_noise(self) -> bool | None:
        return None if self.noise is None else abs(self.change) <= self.noise


class CallsChange(msgspec.Struct, frozen=True, kw_only=True):
    """One collective type, or one bucket / FSDP module, per rank and step."""

    name: str
    calls: Change
    megabytes: Change
    duration_ms: Change
    exposed_ms: Change  # its share of the exposed communication (concurrent calls once)


class Diff(msgspec.Struct, frozen=True, kw_only=True):
    before: str  # run A's name
    after: str
    rank_steps: tuple[int, int]  # the rank-steps each mean is over
    step_ms: Change  # the step's window
    parts: tuple[Change, ...]  # compute, exposed communication, idle: they sum to step_ms
    collectives: tuple[CallsChange, ...]
    labels: tuple[CallsChange, ...]  # buckets, FSDP modules
    kernels: tuple[Change, ...]  # the TOP_KERNELS whose time per rank-step changed most
    caveats: tuple[str, ...]


def diff(a: JobReport, b: JobReport, a_name: str, b_name: str,
         a_work: pl.DataFrame | None = None,
         b_work: pl.DataFrame | None = None,
         a_steps: Container[int] | None = None,
         b_steps: Container[int] | None = None) -> Diff:  # fmt: skip
    """`*_work`: each run's time per step and name (WORK_SCHEMA), for the kernels that changed
    most; `*_steps`: the steps of each side compared (all where None): two ranges of one job,
    or of two runs."""
    sa, sb = _step_parts(a, a_steps), _step_parts(b, b_steps)
    a_calls, b_calls = _in(a.calls, sa, a_steps), _in(b.calls, sb, b_steps)
    if a_work is not None:
        a_work = _in(a_work, sa, a_steps)
    if b_work is not None:
        b_work = _in(b_work, sb, b_steps)
    caveats = [
        f"{name} has no profiler steps with their communication measured: its figures are 0"
        for name, s in ((a_name, sa), (b_name, sb))
        if s.height == 0
    ]
    parts = tuple(
        _change(what, sa[col] if sa.height else None, sb[col] if sb.height else None)
        for what, col in (
            ("compute", "compute_ms"),
            ("exposed communication", "exposed_ms"),
            ("idle", "idle_ms"),
        )
    )
    n_a, n_b = sa.height, sb.height
    kernels: tuple[Change, ...] = ()
    if a_work is not None and b_work is not None and n_a and n_b:
        kernels = _kernels(a_work, b_work, n_a, n_b)
    return Diff(
        before=a_name,
        after=b_name,
        rank_steps=(n_a, n_b),
        step_ms=_change("step", sa["window_ms"] if n_a else None, sb["window_ms"] if n_b else None),
        parts=parts,
        collectives=_calls_changes(a_calls, b_calls, "collective", n_a, n_b),
        labels=_calls_changes(a_calls, b_calls, "label", n_a, n_b),
        kernels=kernels,
        caveats=tuple(caveats),
    )


def _in(rows: pl.DataFrame, parts: pl.DataFrame, steps: Container[int] | None) -> pl.DataFrame:
    """The rows (calls, intervals) of the steps compared, where only some are."""
    if steps is None:
        return rows
    return rows.filter(pl.col("step").is_in(parts["step"].unique().to_list()))


def _step_parts(job: JobReport, steps: Container[int] | None = None) -> pl.DataFrame:
    """Per rank and step (of `steps`, where given), in ms: window, compute (alone or
    overlapped), exposed, idle."""
    rows = [
        (r.rank, s.step, b.window_ns, b.compute_ns, b.exposed_comm_ns, b.idle_ns)
        for r in job.ranks
        for s in r.steps
        if (b := s.breakdown).exposed_comm_ns is not None
        and b.idle_ns is not None
        and (steps is None or s.step in steps)
    ]
    cols = ["rank", "step", "window_ms", "compute_ms", "exposed_ms", "idle_ms"]
    schema = {c: pl.Int64 for c in cols}
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    return frame.with_columns(pl.col(c) / 1e6 for c in cols[2:])


def _change(what: str, a: pl.Series | None, b: pl.Series | None) -> Change:
    return Change(what=what, before=_mean(a), after=_mean(b), noise=_noise(a, b))


def _mean(values: pl.Series | None) -> float:
    return float(values.mean()) if values is not None and len(values) else 0.0  # type: ignore[arg-type]


def _noise(a: pl.Series | None, b: pl.Series | None) -> float | None:
    """Twice the standard error of the difference of the two means; None below two values on
    either side (no spread to judge by)."""
    if a is None or b is None or len(a) < 2 or len(b) < 2:
        return None
    va = statistics.variance(a.to_list())
    vb = statistics.variance(b.to_list())
    return 2 * math.sqrt(va / len(a) + vb / len(b))


def _per_rank_step(calls: pl.DataFrame, by: str, steps: int) -> pl.DataFrame:
    """Per `by` (collective or label): calls, MB, duration and exposed ms per rank and step, as
    a sum over the calls in steps ÷ the rank-steps."""
    in_steps = calls.filter(pl.col("step").is_not_null() & pl.col(by).is_not_null())
    return in_steps.group_by(by).agg(
        calls=pl.len() / steps,
        megabytes=pl.col("bytes").sum() / 1e6 / steps,
        duration_ms=pl.col("dur_ns").sum() / 1e6 / steps,
        exposed_ms=pl.col("exposed_share_ns").sum() / 1e6 / steps,
    )


def _calls_changes(
    a: pl.DataFrame, b: pl.DataFrame, by: str, n_a: int, n_b: int
) -> tuple[CallsChange, ...]:
    if not n_a or not n_b or by not in a.columns or by not in b.columns:
        return ()
    joined = (
        _per_rank_step(a, by, n_a)
        .join(_per_rank_step(b, by, n_b), on=by, how="full", coalesce=True, suffix="_b")
        .fill_null(0)
    )
    out = [
        CallsChange(
            name=str(row[by]),
            **{
                f: Change(what=f, before=float(row[f]), after=float(row[f"{f}_b"]), noise=None)
                for f in ("calls", "megabytes", "duration_ms", "exposed_ms")
            },
        )
        for row in joined.iter_rows(named=True)
    ]
    # Ties by name: the same input gives the same document every run.
    return tuple(sorted(out, key=lambda c: (-abs(c.exposed_ms.change), c.name)))


def _kernels(a: pl.DataFrame, b: pl.DataFrame, n_a: int, n_b: int) -> tuple[Change, ...]:
    """The work whose time per rank-step changed most: GPU kernels, or CPU ops on CPU runs."""

    def per_name(work: pl.DataFrame, steps: int) -> pl.DataFrame:
        return work.group_by("name").agg(ms=pl.col("ns").sum() / 1e6 / steps)

    joined = per_name(a, n_a).join(per_name(b, n_b), on="name", how="full", coalesce=True,
                                   suffix="_b").fill_null(0)  # fmt: skip
    top = joined.with_columns(d=(pl.col("ms_b") - pl.col("ms")).abs()).sort(
        ["d", "name"], descending=[True, False]
    )
    return tuple(
        Change(what=name, before=float(before), after=float(after), noise=None)
        for name, before, after, _ in top.head(TOP_KERNELS).iter_rows()
    )
