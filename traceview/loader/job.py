"""A loaded run (Job) and a set of them (Runs): what the CLI, the dashboard and Python users
get from traceview.load / traceview.load_runs (loader/front_door.py)."""

from __future__ import annotations

from collections.abc import Container, Sequence
from contextlib import suppress
from functools import cached_property
from pathlib import Path

import msgspec
import polars as pl

from traceview.analysis.critical_path import CriticalPath, job_critical_path
from traceview.analysis.cross_rank import CrossRank, StepSkew
from traceview.analysis.desync import Desync
from traceview.analysis.diff import Diff, diff
from traceview.analysis.finding import Finding
from traceview.analysis.findings import job_findings
from traceview.analysis.fits import AlphaBetaFit
from traceview.analysis.job import JobReport
from traceview.analysis.links import Link, against_peak
from traceview.analysis.prediction import (
    CheckedPrediction,
    Prediction,
    Withheld,
    checked_predictions,
    predict_jobs,
    withheld_predictions,
)
from traceview.analysis.rank import RankReport
from traceview.analysis.run_findings import memory_fit, noisy_steps
from traceview.analysis.scaling import ScalingRow, scaling_rows
from traceview.analysis.scaling_findings import compute_changed, prediction_missed
from traceview.analysis.stragglers import Recurrence
from traceview.analysis.strategy_of import StrategyOf
from traceview.analysis.whatif import Calibration, calibrate
from traceview.errors import TraceviewError
from traceview.inputs import is_stream
from traceview.loader.cycles import rejoined
from traceview.loader.parallel import Failure, Options, analyze_many
from traceview.loader.stored import read_again, read_work
from traceview.parse.run_record import RunRecord, read_run_record
from traceview.tables import INTERVALS_SCHEMA, WORK_SCHEMA


class Job(msgspec.Struct, frozen=True, kw_only=True, dict=True):
    """One run: its ranks' reports (`ranks`, each with `.total` and `.steps`), what could not
    be read (`failures`), and — computed when first asked for — what the ranks give together:
    the run record, every collective call (`calls`), the match across ranks, the fits."""

    folder: Path | None  # None for a trace named on its own
    ranks: tuple[RankReport, ...]
    failures: tuple[Failure, ...] = ()
    # Where each rank was read from (its traces — one a profiling cycle — or its store
    # partition) and how: what a load left out (the intervals) is read from there when first
    # asked for.
    rank_files: tuple[tuple[Path, ...], ...] = ()
    stored: bool = False
    options: Options | None = None

    @property
    def name(self) -> str:
        return str(self.folder if self.folder is not None else self.ranks[0].trace)

    @cached_property
    def run(self) -> RunRecord | None:
        """The harness's run.json beside the traces, if there is one (a broken one is an
        error, raised only here: commands that do not need it never read it)."""
        return read_run_record(self.folder) if self.folder is not None else None

    @property
    def strategy(self) -> str | None:
        """The run's strategy: from run.json, else from what its traces say of their run, else
        inferred from what they show (`strategy_of` says which, and on what)."""
        return self.strategy_of.name

    @property
    def strategy_of(self) -> StrategyOf:
        return self.report.strategy_of

    @cached_property
    def report(self) -> JobReport:
        return JobReport(
            folder=self.folder,
            ranks=self.ranks,
            run=self.run,
            link_gbps=self.options.link_gbps if self.options else None,
        )

    @property
    def calls(self) -> pl.DataFrame:
        """Every collective call of every rank (traceview/tables.py JOB_CALLS_SCHEMA)."""
        return self.report.calls

    @property
    def cross_rank(self) -> CrossRank | None:
        return self.report.cross_rank

    @property
    def step_skew(self) -> tuple[StepSkew, ...]:
        return self.report.step_skew

    @property
    def link(self) -> tuple[Link | None, str]:
        """The link the collectives ran on, or why it is not known (docs/metrics.md "Against
        the link's peak")."""
        return self.report.link

    def against_peak(self) -> pl.DataFrame:
        """Per collective and size: calls, median busbw, lower_bound, peak_pct (empty where the
        link is not known)."""
        link, _ = self.link
        if link is None:
            return pl.DataFrame()
        return against_peak(self.calls, link)

    @property
    def desync(self) -> Desync | None:
        """Desync and hang signs across the ranks' collective calls (docs/metrics.md
        "Desync"); None below two ranks."""
        return self.report.desync

    @property
    def stragglers(self) -> Recurrence | None:
        """Per step, the rank the others waited for, and whether it is the same rank step
        after step (docs/metrics.md "Stragglers"); None unless the ranks are aligned."""
        return self.report.recurrence

    def critical_path(self, steps: Container[int] | None = None) -> CriticalPath:
        """Per step (of `steps`, where given), the chain of work across ranks that set the
        step's end, and the step's time by rank and category (docs/metrics.md "Critical
        path"). Reads the ranks' intervals where they were not kept, a few ranks at a time;
        every step's path is walked once."""
        if steps is None:
            return self._whole_critical_path
        return job_critical_path(self.report, self.intervals_of, steps)

    @cached_property
    def _whole_critical_path(self) -> CriticalPath:
        return job_critical_path(self.report, self.intervals_of)

    @property
    def fits(self) -> tuple[AlphaBetaFit, ...]:
        return self.report.fits

    @property
    def fit_on(self) -> str:
        return self.report.fit_on

    @cached_property
    def findings(self) -> tuple[Finding, ...]:
        """What the analysis says to change (analysis/findings.py); a broken run.json leaves
        the rules to the traces alone."""
        try:
            report = self.report  # reads run.json
        except TraceviewError:
            report = JobReport(folder=self.folder, ranks=self.ranks, run=None)
        return tuple(job_findings(report, self.name))

    @cached_property
    def work(self) -> pl.DataFrame:
        """Every rank's time per profiler step and name of work as one table
        (traceview/tables.py WORK_SCHEMA): what a diff reads, where the intervals are not."""
        frames = [r.work for r in self.ranks]
        missing = [i for i, f in enumerate(frames) if f is None]
        if missing:  # ranks read from a store without it
            read = read_work(
                [self.rank_files[i][0] for i in missing], [self.ranks[i] for i in missing]
            )
            for i, frame in zip(missing, read, strict=True):
                frames[i] = frame
        kept = [f for f in frames if f is not None]
        return pl.concat(kept, rechunk=True) if kept else pl.DataFrame(schema=WORK_SCHEMA)

    @cached_property
    def intervals(self) -> pl.DataFrame:
        """The model of every rank as one table (traceview/tables.py INTERVALS_SCHEMA, with its
        `rank` column). Ranks loaded without theirs (keep_intervals) are read again for them
        when first asked for."""
        return self.intervals_of(range(len(self.ranks)))

    def intervals_of(self, positions: Sequence[int]) -> pl.DataFrame:
        """The intervals of the ranks at these positions of `ranks` only (as `intervals`): what
        a chart of a few ranks reads of a job of many, read where they were not kept."""
        frames = [self.ranks[i].intervals for i in positions]
        missing = [k for k, f in enumerate(frames) if f is None]
        if missing:
            read = self._read_intervals([positions[k] for k in missing])
            for k, frame in zip(missing, read, strict=True):
                frames[k] = frame
        kept = [f for f in frames if f is not None]
        return pl.concat(kept, rechunk=True) if kept else pl.DataFrame(schema=INTERVALS_SCHEMA)

    def _read_intervals(self, indexes: list[int]) -> list[pl.DataFrame | None]:
        if self.options is None or len(self.rank_files) != len(self.ranks):
            raise TraceviewError(f"{self.name}: loaded without its intervals (keep_intervals)")
        groups = [self.rank_files[i] for i in indexes]
        files = [f for group in groups for f in group]
        if any(is_stream(f) for f in files):
            raise TraceviewError(f"{self.name}: a stream cannot be read again for its intervals")
        options = msgspec.structs.replace(self.options, keep_intervals=True)
        outcomes = iter(
            read_again(files, [self.ranks[i] for i in indexes], options)
            if self.stored  # a partition a rank: `files` are the ranks' partitions
            else analyze_many(files, options=options)
        )
        out = []
        for group in groups:
            cycles = []
            for outcome in (next(outcomes) for _ in group):
                if isinstance(outcome, Failure):
                    raise TraceviewError(outcome.message)
                cycles.append(outcome)
            out.append(rejoined(cycles).intervals)
        return out


class Runs(msgspec.Struct, frozen=True, kw_only=True, dict=True):
    """Every run some paths name, loaded; and the comparison across them."""

    jobs: tuple[Job, ...]
    failures: tuple[Failure, ...] = ()  # traces (or run folders) that could not be read
    skipped: tuple[Path, ...] = ()  # JSON files in run folders that are no traces

    @property
    def reports(self) -> list[RankReport]:
        return [r for job in self.jobs for r in job.ranks]

    def scaling(self) -> list[ScalingRow]:
        """Per strategy and DP degree: throughput, E(N), exposed fraction, volume, memory."""
        return list(self._scaling)

    @cached_property
    def _scaling(self) -> tuple[ScalingRow, ...]:
        # Made once: a report asks for it in each of its sections, and a run of many steps
        # costs a pass over all of them (a CPU rank of 200,000 steps: 0.3 s a pass).
        return tuple(scaling_rows([job.report for job in self.jobs]))

    def predictions(self) -> list[Prediction]:
        return predict_jobs([job.report for job in self.jobs])

    def diff(
        self, a_steps: Container[int] | None = None, b_steps: Container[int] | None = None
    ) -> Diff:
        """The two runs loaded, the first (A) against the second (B) — or, with one run and
        both step selections, its steps `a_steps` against its steps `b_steps`: where the step's
        time went (docs/metrics.md "Diff")."""
        if len(self.jobs) == 1 and a_steps is not None and b_steps is not None:
            a = b = self.jobs[0]
        elif len(self.jobs) == 2:
            a, b = self.jobs
        else:
            raise TraceviewError(
                f"diff compares two runs, or two step ranges of one (--steps-a, --steps-b); "
                f"these paths hold {len(self.jobs)}: name two run folders (or traces), one store "
                "job each with --job, or one run with both step ranges"
            )
        a_name = a.name if a_steps is None else f"{a.name} steps {a_steps}"
        b_name = b.name if b_steps is None else f"{b.name} steps {b_steps}"
        return diff(a.report, b.report, a_name, b_name, a.work, b.work, a_steps, b_steps)

    def what_if(self, job: Job) -> Calibration | None:
        """The what-if simulator calibrated on `job` (one of these runs), with its strategy's
        DP-1 run among them for E(N): `.simulate(dp, busbw_gbps=, hidden_share=,
        message_bytes=)` (docs/metrics.md "What-if"). None where the run cannot carry one."""
        report = job.report
        strategy = report.run.strategy if report.run else None
        base = next(
            (
                j.report
                for j in self.jobs
                if strategy and j.run and j.run.strategy == strategy and j.run.world_size == 1
            ),
            None,
        )
        return calibrate(report, base)

    def checked_predictions(self) -> list[CheckedPrediction]:
        """Each measured run beside what the model predicts for it from a smaller run of its
        strategy (docs/metrics.md "Predictions checked")."""
        return checked_predictions([job.report for job in self.jobs])

    def withheld_predictions(self) -> list[Withheld]:
        """The strategies that get no prediction though they have runs to predict from (noisy
        step times, different threads per rank), with why."""
        return withheld_predictions([job.report for job in self.jobs])

    def findings(self, memory_budget_bytes: float | None = None) -> list[Finding]:
        """Every job's findings; noisy step times; with a memory budget per rank, the least
        sharding whose model states fit it (for runs with a run record)."""
        found = []
        with suppress(TraceviewError):  # a broken run.json: said by the commands that need it
            # Across DP degrees: a change in per-rank compute is often the largest term, so it
            # leads; then the predictions it makes miss.
            named = [(job.name, job.report) for job in self.jobs]
            found += compute_changed(named)
            found += prediction_missed(self.checked_predictions(), named)
        found += [f for job in self.jobs for f in job.findings]
        with suppress(TraceviewError):  # a broken run.json: said by the commands that need it
            found += [f for row in self.scaling() if (f := noisy_steps(row)) is not None]
        if memory_budget_bytes is not None:
            seen = set()  # one finding per model and DP degree, not per strategy run
            for job in self.jobs:
                run = _run_or_none(job)
                key = run and (run.num_params, run.config.precision, run.world_size)
                if run is None or key in seen:
                    continue
                seen.add(key)
                if f := memory_fit(run, job.name, memory_budget_bytes):
                    found.append(f)
        return found


def _run_or_none(job: Job) -> RunRecord | None:
    try:
        return job.run
    except TraceviewError:
        return None
