"""Readable text tables: per rank and step (analyze), per call (collectives), across ranks
(ranks) and across runs (compare)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from traceview.analysis import Breakdown, RankReport
from traceview.analysis.breakdown import METRICS
from traceview.analysis.exposure import exposure_by_step
from traceview.analysis.findings import NO_FINDINGS, Finding
from traceview.analysis.job import BANDWIDTH_ON_DURATION, LOWER_BOUND
from traceview.analysis.scaling import COMM_PER_STEP
from traceview.analysis.spread import rank_spread
from traceview.cli.reporters.common import PARTIAL, call_rows, rank_rows
from traceview.cli.steps import StepSelection
from traceview.loader import Job, Runs


def aligned(
    rows: Sequence[Sequence[str]],
    indent: str = "  ",
    left_last: bool = False,
    left_first: bool = False,
) -> list[str]:
    """Right-align every column (the first and the last left-aligned if asked), two spaces
    apart."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [c.rjust(w) for c, w in zip(row, widths, strict=True)]
        if left_first:
            cells[0] = row[0].ljust(widths[0])
        if left_last:
            cells[-1] = row[-1]
        out.append(indent + "  ".join(cells))
    return out


# -- analyze -------------------------------------------------------------------------------

_STEP_HEAD = (
    "step",
    "window ms",
    "compute ms",
    "comm ms",
    "overlap ms",
    "exposed ms",
    "compute-only ms",
    "idle ms",
    "overlap %",
)


def analyze(runs: Runs, steps: StepSelection | None, per_rank: bool = False) -> str:
    """A job of several ranks leads with its ranks side by side; each rank's own table for a
    job of one rank, or when asked (`per_rank`)."""
    parts = []
    for job in runs.jobs:
        if len(job.ranks) > 1:
            parts.append(_spread_table(job, steps, per_rank))
        if len(job.ranks) == 1 or per_rank:
            parts += [_rank_table(r, steps) for r in job.ranks]
    return "\n".join(parts) + "".join(line + "\n" for line in findings_lines(runs.findings()))


# The step table's column names, a metric per row.
_SPREAD_NAMES = dict(zip(METRICS, _STEP_HEAD[1:], strict=False))


def _spread_table(job: Job, steps: StepSelection | None, per_rank: bool) -> str:
    ranks = job.ranks
    backends = {r.backend for r in ranks if r.backend} or {"backend unknown"}
    over = "whole traces" if steps is None else f"steps {steps}"
    lines = [
        f"{job.name} · {len(ranks)} ranks · {', '.join(sorted(backends))} · {ranks[0].mode} · "
        f"{over}"
    ]
    cells = [["", "min", "median", "max", "worst rank"]]
    for s in rank_spread(ranks, None if steps is None else steps.__contains__):
        if s.metric == "overlap_pct":
            name, fmt = "overlap %", (lambda v: f"{v:.1f}")
        else:
            name, fmt = _SPREAD_NAMES[s.metric], (lambda v: f"{v / 1e6:,.3f}")
        if s.ranks == 0:
            cells.append([name, "unknown", "unknown", "unknown", "-"])
            continue
        assert s.min is not None and s.median is not None and s.max is not None
        worst = "-" if s.worst_rank is None or s.min == s.max else str(s.worst_rank)
        cells.append([name, fmt(s.min), fmt(s.median), fmt(s.max), worst])
    lines += aligned(cells, left_first=True)
    said: dict[str, list[str]] = {}
    for r in ranks:
        for n in r.notes:
            if n.caveat or n.lossy:
                said.setdefault(n.message, []).append(str(r.rank))
    for message, who in said.items():
        lines.append(f"  caveat (ranks {', '.join(who)}): {message}")
    if not per_rank:
        lines.append("  each rank's steps: --per-rank")
    return "\n".join(lines) + "\n"


def findings_lines(found: Sequence[Finding]) -> list[str]:
    """Each finding: what the numbers show, then what to do; or that there is none."""
    if not found:
        return ["", NO_FINDINGS]
    lines = ["", "findings:"]
    for f in found:
        lines += [f"  - {Path(f.job).name}: {f.what}", f"    → {f.action}"]
    return lines


def _rank_table(r: RankReport, steps: StepSelection | None) -> str:
    who = "rank unknown" if r.rank is None else f"rank {r.rank}"
    if r.world_size is not None:
        who += f" of {r.world_size}"
    lines = [
        f"{who} · {r.backend or 'backend unknown'} · {r.mode} · {r.trace} "
        f"({r.size_bytes / 1e6:,.1f} MB)"
    ]
    rows = rank_rows(r, steps, "before first step", PARTIAL)
    if rows:
        lines += aligned([list(_STEP_HEAD)] + [[name, *_cells(b)] for name, b in rows])
    for c in r.collectives:
        size = "size unknown" if c.bytes is None else f"{c.bytes / 1e6:,.1f} MB"
        if c.bytes is not None and c.bytes_known < c.count:
            size += f" ({c.bytes_known} of {c.count} sized)"
        lines.append(f"  {c.collective}: {c.count} calls, {c.total_ns / 1e6:,.3f} ms, {size}")
    for n in r.notes:
        lines.append(f"  {'warning' if n.lossy else 'caveat' if n.caveat else 'note'}: {n.message}")
    return "\n".join(lines) + "\n"


def _cells(b: Breakdown) -> list[str]:
    cells = ["unknown" if (v := b.ns(m)) is None else f"{v / 1e6:,.3f}" for m in METRICS]
    cells.append("-" if b.overlap_pct is None else f"{b.overlap_pct:.1f}")
    return cells


# -- collectives ---------------------------------------------------------------------------

_CALL_SHOWN = [
    ("rank", "rank", "{}"),
    ("step", "step", "{}"),
    ("index", "#", "{}"),
    ("collective", "collective", "{}"),
    ("label", "label", "{}"),
    ("group_size", "group", "{}"),
    ("queue_us", "queue µs", "{:,.1f}"),
    ("duration_us", "duration µs", "{:,.1f}"),
    ("wait_us", "wait µs", "{:,.1f}"),
    ("transfer_us", "transfer µs", "{:,.1f}"),
    ("bytes", "MB", "{:,.2f}"),
    ("busbw_gbps", "busbw GB/s", "{:,.2f}"),
    ("exposed_us", "exposed µs", "{:,.1f}"),
]


def collectives(runs: Runs, steps: StepSelection | None) -> str:
    lines = []
    for job in runs.jobs:
        of = job.strategy_of
        strategy = f" · {of.said}" if of.name else ""
        lines.append(f"{job.name}{strategy} · {len(job.ranks)} trace(s)")
        if of.source == "inferred" and of.evidence:
            lines.append(f"  strategy inferred from the traces: {of.evidence}")
        table = call_rows(job, steps)
        lines += _call_lines(table) if table.height else ["  no collective calls"]
        chosen = job.calls if steps is None else job.calls.filter(steps.expr("step"))
        for e in exposure_by_step(chosen):
            worst = ", ".join(f"{c.name} {c.exposed_ns / 1e3:,.1f} µs" for c in e.calls[:3])
            lines.append(f"  rank {e.rank} step {e.step}: most exposed: {worst}")
        for r in job.ranks:
            for t in r.backward_tails:
                if steps is None or t.step in steps:
                    lines.append(
                        f"  rank {r.rank} step {t.step}: backward tail {t.tail_ns / 1e3:,.1f} µs "
                        "(end of backward compute -> end of the last gradient collective)"
                    )
        if job.cross_rank is not None and not job.cross_rank.aligned:
            lines.append(
                f"  no wait/transfer split: the ranks are not aligned ({job.cross_rank.reason})"
            )
        basis = (
            "transfer times (after cross-rank alignment)"
            if job.fit_on == "transfer"
            else "durations"
        )
        for fit in job.fits:
            if fit.alpha_us is not None and fit.bandwidth_gbps is not None:
                lines.append(
                    f"  {fit.collective} fit on {basis}: α {fit.alpha_us:,.1f} µs, "
                    f"{fit.bandwidth_gbps:,.2f} GB/s, R² {fit.r2:.2f}"
                )
            lines.append(f"  {fit.collective}: {fit.advice}")
        lines.append("")
    return "\n".join(lines)


def _call_lines(table: pl.DataFrame) -> list[str]:
    rows = [[h for _, h, _ in _CALL_SHOWN]]
    for r in table.iter_rows(named=True):
        cells = []
        for col, _, fmt in _CALL_SHOWN:
            v = r[col]
            if col == "bytes" and v is not None:
                v = v / 1e6
            cell = "-" if v is None else fmt.format(v)
            if col == "busbw_gbps" and v is not None and r["bandwidth_on"] == "duration":
                cell = LOWER_BOUND + cell
            cells.append(cell)
        rows.append(cells)
    lines = aligned(rows)
    if (table["bandwidth_on"] == "duration").any():
        lines.append(f"  {LOWER_BOUND} {BANDWIDTH_ON_DURATION}")
    return lines


# -- ranks ---------------------------------------------------------------------------------


def ranks(runs: Runs) -> str:
    lines = []
    for job in runs.jobs:
        cross = job.cross_rank
        if cross is None:
            lines += [
                f"{job.name}: {len(job.ranks)} rank trace(s); cross-rank analysis needs two or "
                "more traces of one job with known ranks",
                "",
            ]
            continue
        if not cross.aligned:
            lines.append(
                f"{job.name} · {len(job.ranks)} ranks · NOT ALIGNED: {cross.reason}; no clock "
                "offsets, wait/transfer split or straggler"
            )
            lines += _skew_lines(job)
            lines.append("")
            continue
        rejected = f", {cross.rejected} rejected" if cross.rejected else ""
        lines.append(
            f"{job.name} · {len(job.ranks)} ranks · {cross.matched} collectives matched on every "
            f"rank by {cross.matched_by} ({cross.unmatched} calls unmatched{rejected}) · clocks "
            f"on rank {cross.reference_rank}'s"
        )
        if cross.reason:
            lines.append(f"  note: {cross.reason}")
        rows = [
            ["rank", "clock offset µs", "residual µs", "wait ms", "transfer ms", "arrived last"]
        ]
        for a in cross.ranks:
            rows.append(
                [
                    str(a.rank),
                    f"{a.offset_ns / 1000:,.1f}",
                    f"{a.residual_ns / 1000:,.1f}",
                    f"{a.wait_ns / 1e6:,.3f}",
                    f"{a.transfer_ns / 1e6:,.3f}",
                    f"{a.last_arrivals} of {cross.matched}",
                ]
            )
        lines += aligned(rows)
        if cross.straggler is not None:
            a = cross.of(cross.straggler)
            lines.append(
                f"  straggler: rank {a.rank} (arrived last at {a.last_arrivals} of "
                f"{cross.matched} collectives)"
            )
        lines += _skew_lines(job)
        lines.append("")
    return "\n".join(lines)


def _skew_lines(job: Job) -> list[str]:
    return [
        f"  step {s.step}: {s.shortest_ns / 1e6:,.3f}–{s.longest_ns / 1e6:,.3f} ms "
        f"across ranks (skew {s.skew_ns / 1e6:,.3f} ms, slowest rank {s.slowest_rank})"
        for s in job.step_skew
    ]


# -- compare -------------------------------------------------------------------------------

_COMPARE_NOTE = (
    "step s: the median of the run's measured steps (unprofiled ones from run.json, else "
    "profiled; traces alone: each step's slowest rank). E(N) = throughput(N) / "
    "(N × throughput(1)) against the same strategy's DP-1 run (T(1)/T(N) for traces "
    "without a run record); " + COMM_PER_STEP + "; "
    "model states: the largest rank; theory = the textbook ZeRO formula for the "
    "run's precision (AdamW; bf16 = mixed precision), and 'as run' the layout the harness "
    'holds where it differs, which the measurement should match (README "Memory").'
)


def _fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _mb(value: float | None) -> str:
    return _fmt(None if value is None else value / 1e6, ",.1f")


def compare(runs: Runs, memory_budget_bytes: float | None = None) -> str:
    rows = runs.scaling()
    head = [
        "strategy",
        "DP",
        "step s (min–max)",
        "samples/s",
        "tokens/s",
        "E(N)",
        "exposed comm",
        "traffic Ψ (theory)",
        "buffers Ψ (theory)",
        "model states MB (theory)",
        "!",
        "run",
    ]
    cells = [head]
    for r in rows:
        theory = _mb(r.model_state_theory_bytes)
        if r.model_state_layout_bytes is not None:
            theory += f"; as run {_mb(r.model_state_layout_bytes)}"
        spread = (
            f"{_fmt(r.step_seconds, '.3f')} ({r.step_seconds_min:.3f}–{r.step_seconds_max:.3f})"
            if r.step_seconds_min is not None and r.step_seconds_max is not None
            else _fmt(r.step_seconds, ".3f")
        )
        cells.append(
            [
                r.strategy + ("*" if r.strategy_source == "inferred" else ""),
                _fmt(r.dp, "d"),
                spread,
                _fmt(r.samples_per_s, ",.1f"),
                _fmt(r.tokens_per_s, ",.0f"),
                _fmt(r.efficiency, ".2f"),
                _fmt(r.exposed_comm_fraction, ".1%"),
                r.traffic_text,
                r.comm_volume_text,
                f"{_mb(r.model_state_bytes)} ({theory})",
                "!" if r.caveats else "",
                Path(r.job).name,
            ]
        )
    lines = aligned(cells, indent="", left_last=True)
    said = [f"! {Path(r.job).name}: {c}" for r in rows for c in r.caveats]
    said += [
        f"* {Path(r.job).name}: inferred from the traces: {r.strategy_evidence}"
        for r in rows
        if r.strategy_source == "inferred" and r.strategy_evidence
    ]
    found = findings_lines(runs.findings(memory_budget_bytes))
    return "\n".join([*lines, "", *said, *([""] if said else []), _COMPARE_NOTE, *found]) + "\n"
