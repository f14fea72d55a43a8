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

from traceview.analysis.finding import traced_of
from traceview.analysis.job import JobReport
from traceview.plain import UNKNOWN

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


class RankChange(msgspec.Struct, frozen=True, kw_only=True):
    """One rank (in both runs) against itself, per its steps; each change judged against its
    own step-to-step spread."""

    rank: int
    step_ms: Change
    compute: Change
    exposed: Change  # exposed communication
    idle: Change
    waiting: Change | None  # at collectives, for the last rank (None: a run not aligned)


# The figures a rank is named for, when it changed most (RankChange's fields).
RANK_FIGURES = {"compute": "compute", "waiting": "waiting", "exposed": "exposed communication"}


class SetupChange(msgspec.Struct, frozen=True, kw_only=True):
    """Something of the runs' set-up that differs: as the traces or run records say it."""

    what: str
    before: str
    after: str


class Diff(msgspec.Struct, frozen=True, kw_only=True):
    before: str  # run A's name
    after: str
    rank_steps: tuple[int, int]  # the rank-steps each mean is over
    steps: tuple[int, int]  # the profiler steps each side's spread is over
    step_ms: Change  # the step's window
    parts: tuple[Change, ...]  # compute, exposed communication, idle: they sum to step_ms
    collectives: tuple[CallsChange, ...]
    labels: tuple[CallsChange, ...]  # buckets, FSDP modules
    kernels: tuple[Change, ...]  # the TOP_KERNELS whose time per rank-step changed most
    ranks: tuple[RankChange, ...]  # every rank both runs have, by rank
    setup: tuple[SetupChange, ...]  # what differs in the runs' set-up
    caveats: tuple[str, ...]

    def most_changed(self, figure: str) -> RankChange | None:
        """The rank whose `figure` (a RANK_FIGURES key) changed most (the lowest of ties)."""
        known = [r for r in self.ranks if getattr(r, figure) is not None]
        return max(known, key=lambda r: abs(getattr(r, figure).change), default=None)


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
        _change(what, sa, sb, col)
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
        steps=(sa["step"].n_unique(), sb["step"].n_unique()),
        step_ms=_change("step", sa, sb, "window_ms"),
        parts=parts,
        collectives=_calls_changes(a_calls, b_calls, "collective", n_a, n_b),
        labels=_calls_changes(a_calls, b_calls, "label", n_a, n_b),
        kernels=kernels,
        ranks=_rank_changes(_with_waiting(a, sa, a_calls), _with_waiting(b, sb, b_calls)),
        setup=setup_changes(a, b) if a is not b else (),
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


def _change(what: str, a: pl.DataFrame, b: pl.DataFrame, col: str) -> Change:
    """The mean of `col` per rank and step on each side, judged against the spread of its
    steps' means over their ranks (the steps are the samples: a step's ranks are not
    independent of each other)."""
    return Change(
        what=what,
        before=_mean(a[col] if a.height else None),
        after=_mean(b[col] if b.height else None),
        noise=_noise(_by_step(a, col), _by_step(b, col)),
    )


def _by_step(parts: pl.DataFrame, col: str) -> pl.Series | None:
    if not parts.height:
        return None
    return parts.group_by("step").agg(pl.col(col).mean()).get_column(col)


def _with_waiting(job: JobReport, parts: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """The per rank and step parts with `waiting_ms`: the time the rank's collectives of the
    step waited for the last rank (null where the job is not aligned)."""
    if not job.aligned or not parts.height:
        return parts.with_columns(waiting_ms=pl.lit(None, pl.Float64))
    waited = (
        calls.filter(pl.col("step").is_not_null() & pl.col("rank").is_not_null())
        .group_by("rank", "step")
        .agg(waiting_ms=pl.col("wait_ns").fill_null(0).sum() / 1e6)
        .cast({"rank": pl.Int64, "step": pl.Int64})
    )
    return parts.join(waited, on=["rank", "step"], how="left").with_columns(
        pl.col("waiting_ms").fill_null(0.0)
    )


def _rank_changes(a: pl.DataFrame, b: pl.DataFrame) -> tuple[RankChange, ...]:
    """Each rank both sides have, against itself: its steps are the samples."""
    both = sorted(set(a["rank"].drop_nulls().to_list()) & set(b["rank"].drop_nulls().to_list()))
    mine_a = a.partition_by("rank", as_dict=True) if both else {}
    mine_b = b.partition_by("rank", as_dict=True) if both else {}
    waits = a["waiting_ms"].null_count() < a.height and b["waiting_ms"].null_count() < b.height
    out = []
    for rank in both:
        ra, rb = mine_a[(rank,)], mine_b[(rank,)]  # one row a step: _change's steps are its own
        out.append(
            RankChange(
                rank=rank,
                step_ms=_change("step", ra, rb, "window_ms"),
                compute=_change("compute", ra, rb, "compute_ms"),
                exposed=_change("exposed communication", ra, rb, "exposed_ms"),
                idle=_change("idle", ra, rb, "idle_ms"),
                waiting=_change("waiting", ra, rb, "waiting_ms") if waits else None,
            )
        )
    return tuple(out)


def setup_changes(a: JobReport, b: JobReport) -> tuple[SetupChange, ...]:
    """What the two runs' traces and run records say differently of their set-up: the GPU
    model, the world, the strategy, the backend, the harness's flags, the versions."""
    before, after = _setup(a), _setup(b)
    return tuple(
        SetupChange(what=what, before=x or UNKNOWN, after=y or UNKNOWN)
        for what, x in before.items()
        if x != (y := after[what])
    )


def _setup(job: JobReport) -> dict[str, str | None]:
    def one(values: set[str]) -> str | None:
        return ", ".join(sorted(values)) or None

    run = job.run
    flags = (
        run.config
        if run is not None
        else next((r.run.config for r in job.ranks if r.run is not None), None)
    )
    strategy = job.strategy_of
    hosts = {h for r in job.ranks if (h := job.host_of(r)) is not None}
    return {
        "GPU": one({d for r in job.ranks for d in r.devices}),
        "world size": str(traced_of(job)[1]),
        "hosts": str(len(hosts)) if hosts else None,
        "strategy": strategy.name if strategy.name else None,
        "backend": one({r.backend for r in job.ranks if r.backend}),
        **{
            flag: _flag(getattr(flags, flag) if flags is not None else None)
            for flag in ("bucket_cap_mb", "precision", "micro_batch", "seq_len", "grad_accum")
        },
        "torch": run.torch_version if run is not None else None,
        "NCCL": run.nccl_version if run is not None else None,
    }  # fmt: skip


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


def _flag(value: object) -> str | None:
    if value is None:
        return None
    return f"{value:g}" if isinstance(value, float) else str(value)
