"""Across runs: throughput and weak-scaling efficiency against the DP degree, exposed
communication, communication volume and model-state memory, each beside the theory, and a
caveat wherever a figure is more noise than measurement."""

from __future__ import annotations

import statistics

import msgspec
import polars as pl

from traceview.analysis import theory
from traceview.analysis.calls import traffic_factor
from traceview.analysis.fingerprint import Fingerprint, fingerprint
from traceview.analysis.job import JobReport
from traceview.analysis.strategy_of import Source, StrategyOf
from traceview.parse.run_record import RunRecord
from traceview.plain import UNKNOWN, counted

# A run whose step times spread wider than this (max / min) is noise, not a measurement; an
# efficiency above the second cannot be scaling.
NOISY_SPREAD = 1.5
# How every output explains the communication columns (docs/metrics.md "Communication per step").
COMM_PER_STEP = (
    "traffic and buffers per rank and step in Ψ parameter elements: traffic = Σ elements × "
    "the call's nccl-tests bus factor (what goes on the wire; theory 2Ψ(N−1)/N for DDP and "
    "ZeRO-1/2, 3Ψ(N−1)/N for ZeRO-3, 0 at DP 1), buffers = Σ elements (DDP Ψ, ZeRO-1/2 2Ψ, "
    "ZeRO-3 3Ψ); 'as run': torch's ZeroRedundancyOptimizer, the harness's ZeRO-1, keeps DDP's "
    "all-reduce and then broadcasts each parameter from its owner (2Ψ(N−1)/N + Ψ)"
)
MAX_PLAUSIBLE_EFFICIENCY = 1.05


class StepTimes(msgspec.Struct, frozen=True, kw_only=True):
    median_s: float
    min_s: float
    max_s: float
    count: int
    source: str  # which steps: "unprofiled steps", "profiled steps", "trace step windows"

    @property
    def spread(self) -> float:
        return self.max_s / self.min_s if self.min_s > 0 else float("inf")

    @property
    def noisy(self) -> bool:
        return self.count >= 2 and self.spread > NOISY_SPREAD


class ScalingRow(msgspec.Struct, frozen=True, kw_only=True):
    job: str
    strategy: str  # "unknown" where neither a record, the traces' metadata nor the traces tell
    strategy_source: Source  # "run record", "trace metadata", "inferred" or "unknown"
    strategy_evidence: str | None  # what an inferred strategy rests on
    dp: int | None
    # torch's intra-op threads per rank (from the run record, where every rank agrees): E(N)
    # compares runs only where they ran the same number
    threads_per_rank: int | None
    step_seconds: float | None  # median over the measured steps
    step_seconds_min: float | None
    step_seconds_max: float | None
    steps_measured: int
    step_source: str | None
    samples_per_s: float | None  # global batch / median step time (needs a run record)
    tokens_per_s: float | None
    efficiency: float | None  # E(N) = throughput(N) / (N × throughput(1)); T(1)/T(N) without
    exposed_comm_fraction: float | None  # exposed communication ÷ step window, over ranks and steps
    # Per rank and step, in Ψ parameter elements (docs/metrics.md "Communication per step"):
    # what goes on the wire (Σ elements × the call's bus factor) and the buffers' sizes
    # (Σ elements), each beside the ZeRO paper's figure and, where the harness's
    # implementation differs (ZeRO-1 as torch's ZeroRedundancyOptimizer), that implementation's.
    traffic_psi: float | None
    traffic_theory_psi: float | None  # 0 at DP 1: nothing needs exchanging
    traffic_theory_as_run_psi: float | None
    comm_volume_psi: float | None
    comm_volume_theory_psi: float | None
    comm_volume_theory_as_run_psi: float | None
    precision: str | None  # the theory's name for the run's precision: "fp32" or "mixed"
    model_state_bytes: int | None  # the largest rank's params + grads + optimizer
    model_state_theory_bytes: int | None  # the textbook ZeRO formula, the run's precision
    model_state_layout_bytes: int | None  # what the harness holds, where it differs
    caveats: tuple[str, ...] = ()
    # Which model the run trained (analysis/fingerprint.py): E(N) sets runs of one model only.
    model: Fingerprint | None = None

    @property
    def strategy_said(self) -> str:
        """The strategy as outputs show it: "zero3", or "zero3 (inferred)"."""
        return StrategyOf(name=self.strategy, source=self.strategy_source).said

    @property
    def traffic_text(self) -> str:
        """The traffic beside its theory, as every output says it: "2.00 (1.00; as run 2.00)"."""
        return beside_theory(
            self.traffic_psi, self.traffic_theory_psi, self.traffic_theory_as_run_psi
        )

    @property
    def comm_volume_text(self) -> str:
        return beside_theory(
            self.comm_volume_psi, self.comm_volume_theory_psi, self.comm_volume_theory_as_run_psi
        )


def beside_theory(measured: float | None, theory: float | None, as_run: float | None) -> str:
    def f(v: float | None) -> str:
        return UNKNOWN if v is None else f"{v:.2f}"

    said = f(theory) if as_run is None else f"{f(theory)}; as run {f(as_run)}"
    return f"{f(measured)} ({said})"


def step_times(job: JobReport) -> StepTimes | None:
    """From the run record: its steps after the first (which warms caches and rebuilds DDP's
    buckets) that ran unprofiled, else its profiled ones. Without one: per profiled step, the
    slowest rank's step window, over the steps in which some rank worked."""
    if job.run is not None and (from_record := record_step_times(job.run)) is not None:
        return from_record
    per_step: dict[int, float] = {}
    for r in job.ranks:
        for s in (s for s in r.steps if s.holds_work):
            per_step[s.step] = max(per_step.get(s.step, 0.0), s.breakdown.window_ns / 1e9)
    return _times(list(per_step.values()), "trace step windows") if per_step else None


def record_step_times(run: RunRecord) -> StepTimes | None:
    """A run record's measured steps: those after the first that ran unprofiled, else the
    profiled ones."""
    profiled = {p.run_step for p in run.profiled_steps}
    plain = [t for i, t in enumerate(run.step_seconds) if i > 0 and i not in profiled]
    chosen = plain or [run.step_seconds[i] for i in sorted(profiled) if i < len(run.step_seconds)]
    return _times(chosen, "unprofiled steps" if plain else "profiled steps") if chosen else None


def _times(values: list[float], source: str) -> StepTimes:
    return StepTimes(
        median_s=statistics.median(values),
        min_s=min(values),
        max_s=max(values),
        count=len(values),
        source=source,
    )


def _exposed_fraction(job: JobReport) -> float | None:
    steps = [s.breakdown for r in job.ranks for s in r.steps]
    exposed = [b.exposed_comm_ns for b in steps]
    window = sum(b.window_ns for b in steps)
    if not window or None in exposed:
        return None
    return sum(e for e in exposed if e is not None) / window


class Exchanged(msgspec.Struct, frozen=True, kw_only=True):
    """Measured communication per rank and step, in Ψ elements; None where unknown."""

    volume_psi: float | None
    traffic_psi: float | None
    caveat: str | None = None


def exchanged(job: JobReport, psi: int | None, dp: int | None) -> Exchanged:
    """Σ elements (the buffer volume) and Σ elements × traffic factor (the traffic) of every
    rank's calls in profiler steps, divided by the ranks' steps and by Ψ. At DP 1 no call puts
    anything on the wire. A call whose element count or group size is not recorded makes the
    figure it would enter unknown, and says so."""
    steps = sum(len(r.steps) for r in job.ranks if r.rank is not None)
    if not psi or not steps:
        return Exchanged(volume_psi=None, traffic_psi=None)
    # A barrier carries no payload: it is no part of either figure.
    calls = job.calls.filter(
        pl.col("step").is_not_null() & (pl.col("collective").fill_null("") != "barrier")
    )
    pairs = zip(calls["collective"], calls["group_size"], strict=True)
    factors = pl.Series([traffic_factor(c, n) for c, n in pairs], dtype=pl.Float64)
    unsized = calls["elements"].null_count()
    volume = None if unsized else float(calls["elements"].sum()) / (steps * psi)
    traffic = (
        None
        if unsized or factors.null_count()
        else float((calls["elements"] * factors).sum()) / (steps * psi)
    )
    if dp == 1:  # one rank puts nothing on the wire, whatever its calls say of their group
        traffic = 0.0
    caveat = None
    if unsized or (traffic is None and calls.height):
        caveat = (
            f"communication per step unknown: {unsized:,} of {calls.height:,} calls have no "
            "recorded element count"
            if unsized
            else f"traffic unknown: {factors.null_count():,} of {calls.height:,} calls have no "
            "known group size or bus factor"
        )
    return Exchanged(volume_psi=volume, traffic_psi=traffic, caveat=caveat)


def _memory(run: RunRecord | None, dp: int | None) -> tuple[str | None, int | None, int | None]:
    """(precision, textbook bytes, layout bytes) of a run with a record."""
    if run is None or not dp:
        return None, None, None
    precision = theory.run_precision(run.config)
    if precision is None:
        return None, None, None
    formula = theory.model_state_bytes(run.strategy, run.num_params, dp, precision)
    layout = theory.layout_bytes(run.strategy, run.num_params, dp, precision)
    return (
        precision,
        sum(formula.values()) if formula else None,
        sum(layout.values()) if layout else None,
    )


def _losses(job: JobReport, shown: int = 2) -> list[str]:
    """What the run's traces lost (each loss once, the first few): its figures rest on less."""
    lost = list(dict.fromkeys(n.message for r in job.ranks for n in r.notes if n.lossy))
    said = [f"input lost: {m}" for m in lost[:shown]]
    if len(lost) > shown:
        said.append(f"and {len(lost) - shown} more losses (see each rank's notes)")
    return said


def scaling_rows(jobs: list[JobReport]) -> list[ScalingRow]:
    rows = []
    for job in jobs:
        run = job.run
        dp = (
            run.world_size if run else next((r.world_size for r in job.ranks if r.world_size), None)
        )
        of = job.strategy_of
        strategy = of.name or "unknown"
        times = step_times(job)
        batch = run.global_batch if run else None
        median = times.median_s if times and times.median_s > 0 else None
        states = [sum(r.model_state_bytes.values()) for r in run.ranks] if run else []
        precision, textbook, layout = _memory(run, dp)
        model = fingerprint(job)
        measured = exchanged(job, model.params, dp)
        paper = theory.comm_theory(strategy, dp)
        as_run = theory.comm_theory(strategy, dp, as_run=True)
        caveats = [*_losses(job), *([measured.caveat] if measured.caveat else [])]
        if model.params is None and job.calls.height:
            caveats.append(
                "traffic and buffers per Ψ unknown: no run record, and the traces record no "
                "gradient shapes to count the parameters from (profile with record_shapes=True)"
            )
        elif model.params_from == "traces" and measured.volume_psi is not None:
            caveats.append(
                f"Ψ = {model.params:,} from the traces: the gradients one backward pass makes "
                "ready (no run record)"
            )
        if busy := _busy(run):
            caveats.append(busy)
        if times is not None and times.noisy:
            caveats.append(
                f"noisy: step times vary {times.spread:.{2 if times.spread < 2 else 1}f}× "
                f"({times.min_s:.3f}–"
                f"{times.max_s:.3f} s over {times.count} {times.source})"
            )
        rows.append(
            ScalingRow(
                job=str(job.folder or job.ranks[0].trace),
                strategy=strategy,
                strategy_source=of.source,
                strategy_evidence=of.evidence or None,
                dp=dp,
                threads_per_rank=threads_per_rank(run),
                step_seconds=times.median_s if times else None,
                step_seconds_min=times.min_s if times else None,
                step_seconds_max=times.max_s if times else None,
                steps_measured=times.count if times else 0,
                step_source=times.source if times else None,
                samples_per_s=batch.samples / median if batch and median else None,
                tokens_per_s=batch.tokens / median if batch and median else None,
                efficiency=None,
                exposed_comm_fraction=_exposed_fraction(job),
                traffic_psi=measured.traffic_psi,
                traffic_theory_psi=paper.traffic_psi if paper else None,
                traffic_theory_as_run_psi=as_run.traffic_psi if as_run else None,
                comm_volume_psi=measured.volume_psi,
                comm_volume_theory_psi=paper.volume_psi if paper else None,
                comm_volume_theory_as_run_psi=as_run.volume_psi if as_run else None,
                precision=precision,
                model_state_bytes=max(states) if states else None,
                model_state_theory_bytes=textbook,
                model_state_layout_bytes=layout,
                caveats=tuple(caveats),
                model=model,
            )
        )
    return _with_efficiency(rows)


BUSY = "busy machine"  # the caveat's first words, as "noisy" begins the other's


def _busy(run: RunRecord | None) -> str | None:
    """The caveat of a run whose ranks × threads and the other processes' load, measured by
    the sweep around it, exceed the cores."""
    threads = threads_per_rank(run)
    if run is None or run.machine is None or threads is None:
        return None
    load = run.machine.other_busy_cores
    if load is None or not run.machine.contended(run.world_size, threads):
        return None
    return (
        f"{BUSY}: other processes kept {load:.1f} of its {counted(run.machine.cores, 'core')} "
        f"busy while this run's {counted(run.world_size, 'rank')} × "
        f"{counted(threads, 'thread')} ran: its step times and E(N) measure that contention "
        "(rerun on a quiet machine)"
    )


def threads_per_rank(run: RunRecord | None) -> int | None:
    """The intra-op threads every rank of the run recorded; None where they differ or the
    record does not say."""
    said = {r.intra_op_threads for r in run.ranks} if run else set()
    return said.pop() if len(said) == 1 else None


def _same_model(a: ScalingRow, b: ScalingRow) -> bool:
    return a.model is None or b.model is None or a.model.same_model(b.model)


def _unlike(base: ScalingRow, row: ScalingRow) -> str | None:
    """Why `row` cannot be set against its DP-1 run: they ran different threads per rank."""
    a, b = base.threads_per_rank, row.threads_per_rank
    if a is None or b is None or a == b:
        return None
    return (
        f"no E(N): its DP-1 run ran {counted(a, 'intra-op thread')} per rank and this one {b} "
        "(rerun both with the same --threads)"
    )


def _with_efficiency(rows: list[ScalingRow]) -> list[ScalingRow]:
    """E(N) against the same strategy's DP-1 run among the inputs (weak scaling: the per-rank
    batch is the same at every N), where both ran the same threads per rank. Without
    throughput, T(1)/T(N) from step times. A noisy baseline, or an efficiency above 1.05, is
    said beside the figure."""
    out = []
    for row in rows:
        ones = [r for r in rows if r.strategy == row.strategy and r.dp == 1]
        base = next((r for r in ones if _same_model(r, row)), None)
        eff = None
        caveats = list(row.caveats)
        if base is None and ones and row.model is not None and ones[0].model is not None:
            caveats.append(
                f"no E(N): the {row.strategy} DP-1 run among the inputs is of another model "
                f"({ones[0].model.said}; this run: {row.model.said})"
            )
        unlike = _unlike(base, row) if base is not None else None
        if unlike is not None:
            caveats.append(unlike)
        elif base is not None and row.dp:
            if row.samples_per_s and base.samples_per_s:
                eff = row.samples_per_s / (row.dp * base.samples_per_s)
            elif row.step_seconds and base.step_seconds:
                eff = base.step_seconds / row.step_seconds
            if (
                eff is not None
                and base is not row
                and any(c.startswith("noisy") for c in base.caveats)
            ):
                caveats.append("E(N) rests on a noisy DP-1 run")
            if (
                eff is not None
                and base is not row
                and any(c.startswith(BUSY) for c in base.caveats)
            ):
                caveats.append("E(N) rests on a DP-1 run taken on a busy machine")
            if eff is not None and eff > MAX_PLAUSIBLE_EFFICIENCY:
                caveats.append(
                    f"E(N) {eff:.2f} is above 1: measurement noise, not scaling (rerun both "
                    "on a quiet machine)"
                )
        out.append(msgspec.structs.replace(row, efficiency=eff, caveats=tuple(caveats)))
    # Each strategy's runs of one model together, the models in the order first met.
    models: list[ScalingRow] = []
    for row in out:
        if not any(_same_model(row, m) for m in models):
            models.append(row)

    def model_of(row: ScalingRow) -> int:
        return next(i for i, m in enumerate(models) if _same_model(row, m))

    return sorted(out, key=lambda r: (r.strategy, model_of(r), r.dp or 0))
