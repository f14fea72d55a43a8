"""Readable text tables: per rank and step (analyze), per call (collectives), across ranks
(ranks) and across runs (compare)."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from traceview.cli.reporters.common import (
    BREAKDOWN,
    PARTIAL,
    aligned,
    aligned_columns,
    rank_rows,
)
from traceview.cli.reporters.cross_rank_lines import desync_lines, skew_lines, straggler_lines
from traceview.cli.reporters.diff_lines import diff_table
from traceview.cli.reporters.link_lines import link_lines
from traceview.cli.reporters.path_lines import critical_path_table
from traceview.cli.reporters.prediction_lines import checked_lines
from traceview.documents import StepSelection, build
from traceview.documents import structs as d
from traceview.documents.critical_path import critical_path as path_document
from traceview.documents.diff import diff as diff_document
from traceview.documents.words import (
    BANDWIDTH_ON_DURATION,
    LOWER_BOUND,
    NO_FINDINGS,
    SCALING_LEGEND,
    job_said,
    overlap_tax_said,
    strategy_said,
)
from traceview.loader import Runs
from traceview.plain import GLOSSARY, UNKNOWN, counted, number_runs

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


# The last line of each table: where every word it uses is said in plain terms.
WORDS = f"(the words used here: {GLOSSARY})\n"


def analyze(runs: Runs, steps: StepSelection | None, per_rank: bool = False) -> str:
    """A job of several ranks leads with its ranks side by side; each rank's own table for a
    job of one rank, or when asked (`per_rank`)."""
    doc = build.analyze(runs, steps)
    parts = []
    for job in doc.jobs:
        ranks = [r for r in doc.ranks if r.job == job.job]
        if len(ranks) > 1:
            parts.append(_spread_table(job, ranks, steps, per_rank))
        if len(ranks) == 1 or per_rank:
            parts += [_rank_table(r) for r in ranks]
    found = "".join(line + "\n" for line in findings_lines(doc.findings))
    return "\n".join(parts) + found + WORDS


# The step table's column names, a figure per row.
_SPREAD_NAMES = {
    **dict(zip(BREAKDOWN, _STEP_HEAD[1:], strict=True)),
    "overlap_tax_us": "overlap tax ms",  # docs/metrics.md "Overlap tax": ranks that measure it
}


def _spread_table(
    job: d.JobSpread, ranks: list[d.Rank], steps: StepSelection | None, per_rank: bool
) -> str:
    backends = {r.backend for r in ranks if r.backend} or {"backend unknown"}
    over = "whole traces" if steps is None else f"steps {steps}"
    lines = [
        f"{job_said(job.job)} · {counted(len(ranks), 'rank')} · {', '.join(sorted(backends))} · "
        f"{ranks[0].mode} · {over}"
    ]
    cells = [["", "min", "median", "max", "worst rank"]]
    for key, s in job.spread.items():
        if s.min is None or s.median is None or s.max is None:
            cells.append([_SPREAD_NAMES[key], UNKNOWN, UNKNOWN, UNKNOWN, UNKNOWN])
            continue
        worst = UNKNOWN if s.worst_rank is None or s.min == s.max else str(s.worst_rank)
        shown = [_spread_cell(key, v) for v in (s.min, s.median, s.max)]
        cells.append([_SPREAD_NAMES[key], *shown, worst])
    lines += aligned(cells, left_first=True)
    said: dict[str, list[int | None]] = {}
    for r in ranks:
        for n in r.notes:
            if n.severity in ("caveat", "lossy"):
                said.setdefault(n.message, []).append(r.rank)
        tax = r.overlap_tax
        if tax is not None and tax.pairs and tax.caveat:
            said.setdefault(f"overlap tax: {tax.caveat}", []).append(r.rank)
    for message, who in said.items():
        lines.append(f"  caveat (ranks {_ranks_said(who)}): {message}")
    if not per_rank:
        lines.append("  each rank's steps: --per-rank")
    return "\n".join(lines) + "\n"


def _ranks_said(ranks: list[int | None]) -> str:
    """ "0, 1, 5", or as runs where there are many ("0–4095, 4097–10239"); a rank a trace
    does not say, as unknown."""
    known = [r for r in ranks if r is not None]
    listed = ", ".join(map(str, known)) if len(known) <= _LISTED_RANKS else number_runs(known)
    return ", ".join(x for x in (listed, "unknown" if None in ranks else "") if x)


# Up to this many ranks a caveat lists them one by one.
_LISTED_RANKS = 8


def _spread_cell(key: str, value: float) -> str:
    return f"{value:.1f}" if key == "overlap_pct" else f"{value / 1e3:,.3f}"  # µs -> ms


def findings_lines(found: Sequence[d.FindingJson]) -> list[str]:
    """Each finding: what the numbers show, then what to do; or that there is none."""
    if not found:
        return ["", NO_FINDINGS]
    lines = ["", "findings:"]
    for f in found:
        lines += [f"  - {job_said(f.job, whole=False)}: {f.what}", f"    → {f.action}"]
    return lines


def _rank_table(r: d.Rank) -> str:
    who = "rank unknown" if r.rank is None else f"rank {r.rank}"
    if r.world_size is not None:
        who += f" of {r.world_size}"
    lines = [
        f"{who} · {r.backend or 'backend unknown'} · {r.mode} · {r.trace} "
        f"({r.size_bytes / 1e6:,.1f} MB)"
    ]
    rows = rank_rows(r, BEFORE_FIRST_STEP, PARTIAL)
    if rows:
        lines += aligned_columns(_STEP_HEAD, _step_columns(rows))
    for c in r.collectives:
        size = "size unknown" if c.bytes is None else f"{c.bytes / 1e6:,.1f} MB"
        if c.bytes is not None and c.bytes_known < c.count:
            size += f" ({c.bytes_known} of {c.count} sized)"
        lines.append(
            f"  {c.collective}: {counted(c.count, 'call')}, {c.total_us / 1e3:,.3f} ms, {size}"
        )
    if r.overlap_tax is not None:
        lines.append(f"  {overlap_tax_said(r.overlap_tax)}")
    for n in r.notes:
        kind = {"lossy": "warning", "caveat": "caveat"}.get(n.severity, "note")
        lines.append(f"  {kind}: {n.message}")
    return "\n".join(lines) + "\n"


def _step_columns(rows: list[tuple[str, d.BreakdownJson]]) -> list[list[str]]:
    """The step table's cells, a column at a time: a CPU trace can have 100,000s of steps."""
    breakdowns = [b for _, b in rows]
    columns = [[name for name, _ in rows]]
    for field in BREAKDOWN[:-1]:
        columns.append(
            [
                "unknown" if v is None else f"{v / 1e3:,.3f}"
                for v in map(attrgetter(field), breakdowns)
            ]
        )
    pct = [b.overlap_pct for b in breakdowns]
    columns.append([UNKNOWN if v is None else f"{v:.1f}" for v in pct])
    return columns


# -- collectives ---------------------------------------------------------------------------

# Work launched before the profiling window: in no step, a row of its own.
BEFORE_FIRST_STEP = "before first step"

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
    ("busbw_gbps", "bus bandwidth GB/s", "{:,.2f}"),
    ("exposed_us", "exposed µs", "{:,.1f}"),
]


def collectives(runs: Runs, steps: StepSelection | None) -> str:
    lines = []
    for job in build.collectives(runs, steps).jobs:
        strategy = f" · {strategy_said(job.strategy, job.strategy_source)}" if job.strategy else ""
        lines.append(f"{job_said(job.job)}{strategy} · {counted(len(job.traces), 'trace')}")
        if job.strategy_source == "inferred" and job.strategy_evidence:
            lines.append(f"  strategy inferred from the traces: {job.strategy_evidence}")
        lines += _call_lines(job.calls) if job.calls else ["  no collective calls"]
        for e in job.exposed_by_step:
            worst = ", ".join(f"{c.name} {c.exposed_us:,.1f} µs" for c in e.calls[:3])
            when = "before the first step" if e.step is None else f"step {e.step}"
            lines.append(f"  rank {e.rank} {when}: most exposed: {worst}")
        for t in job.backward_tails:
            lines.append(
                f"  rank {t.rank} step {t.step}: backward tail {t.tail_us:,.1f} µs "
                "(end of backward compute -> end of the last gradient collective)"
            )
        if job.not_aligned_reason is not None:
            lines.append(
                f"  no wait/transfer split: the ranks are not aligned ({job.not_aligned_reason})"
            )
        basis = (
            "transfer times (after cross-rank alignment)"
            if job.fits_on == "transfer"
            else "durations"
        )
        for fit in job.fits:
            if fit.alpha_us is not None and fit.bandwidth_gbps is not None:
                lines.append(
                    f"  {fit.collective} fit on {basis}: fixed cost per call (α) "
                    f"{fit.alpha_us:,.1f} µs, bandwidth {fit.bandwidth_gbps:,.2f} GB/s, "
                    f"R² {fit.r2:.2f}"
                )
            lines.append(f"  {fit.collective}: {fit.advice}")
        lines += link_lines(job)
        lines.append("")
    return "\n".join(lines) + WORDS


def _call_lines(calls: list[d.Call]) -> list[str]:
    rows = [[h for _, h, _ in _CALL_SHOWN]]
    for call in calls:
        cells = []
        for col, _, fmt in _CALL_SHOWN:
            v = getattr(call, col)
            if col == "bytes" and v is not None:
                v = v / 1e6
            cell = UNKNOWN if v is None else fmt.format(v)
            if col == "step" and v is None:  # launched before the profiling window
                cell = BEFORE_FIRST_STEP
            if col == "busbw_gbps" and v is not None and call.bandwidth_on == "duration":
                cell = LOWER_BOUND + cell
            cells.append(cell)
        rows.append(cells)
    lines = aligned(rows)
    if any(c.bandwidth_on == "duration" for c in calls):
        lines.append(f"  {LOWER_BOUND} {BANDWIDTH_ON_DURATION}")
    return lines


# -- ranks ---------------------------------------------------------------------------------


def ranks(runs: Runs) -> str:
    lines = []
    for job in build.ranks(runs).jobs:
        if not job.compared:
            lines += [
                f"{job_said(job.job)}: {counted(job.ranks, 'rank trace')}; cross-rank analysis "
                "needs two or more traces of one job with known ranks",
                "",
            ]
            continue
        if not job.aligned:
            lines.append(
                f"{job_said(job.job)} · {counted(job.ranks, 'rank')} · NOT ALIGNED: "
                f"{job.reason}; no clock offsets, wait/transfer split or straggler"
            )
            lines += skew_lines(job)
            lines += desync_lines(job.desync)
            lines.append("")
            continue
        rejected = f", {job.rejected_matches} rejected" if job.rejected_matches else ""
        lines.append(
            f"{job_said(job.job)} · {counted(job.ranks, 'rank')} · "
            f"{counted(job.matched_collectives, 'collective')} matched on every rank by "
            f"{job.matched_by} ({counted(job.unmatched_calls, 'call')} unmatched{rejected}) · "
            f"clocks on rank {job.reference_rank}'s"
        )
        if job.reason:
            lines.append(f"  note: {job.reason}")
        rows = [
            ["rank", "host", "clock offset µs", "residual µs", "wait ms", "transfer ms",
             "arrived last", "others' wait for it ms"]
        ]  # fmt: skip
        for a in job.per_rank:
            rows.append(
                [
                    str(a.rank),
                    a.host or "?",
                    f"{a.clock_offset_us:,.1f}",
                    f"{a.residual_us:,.1f}",
                    f"{a.wait_us / 1e3:,.3f}",
                    f"{a.transfer_us / 1e3:,.3f}",
                    f"{a.last_arrivals} of {job.matched_collectives}",
                    f"{a.caused_wait_us / 1e3:,.3f}",
                ]
            )
        lines += aligned(rows)
        straggler = next((a for a in job.per_rank if a.rank == job.straggler), None)
        if straggler is not None:
            waited = sum(a.wait_us for a in job.per_rank)
            lines.append(
                f"  straggler: rank {straggler.rank} (its late arrivals cost the others "
                f"{straggler.caused_wait_us / 1e3:,.3f} ms of waiting, "
                f"{100 * straggler.caused_wait_us / waited:.0f}% of all their waiting)"
            )
        lines += straggler_lines(job.stragglers)
        lines += skew_lines(job)
        lines += desync_lines(job.desync)
        lines.append("")
    return "\n".join(lines) + WORDS


# -- compare -------------------------------------------------------------------------------


def _legend() -> list[str]:
    """compare's columns in a few lines (documents/words.py)."""
    width = max(len(name) for name, _ in SCALING_LEGEND)
    return [f"{name:<{width}}  {said}" for name, said in SCALING_LEGEND]


def _fmt(value: float | int | None, spec: str) -> str:
    return UNKNOWN if value is None else format(value, spec)


def _mb(value: float | None) -> str:
    return _fmt(None if value is None else value / 1e6, ",.1f")


def compare(runs: Runs, memory_budget_bytes: float | None = None) -> str:
    doc = build.compare(runs, memory_budget_bytes)
    rows = doc.runs
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
                job_said(r.job, whole=False),
            ]
        )
    lines = aligned(cells, indent="", left_last=True)
    said = [f"! {job_said(r.job, whole=False)}: {c}" for r in rows for c in r.caveats]
    said += [
        f"* {job_said(r.job, whole=False)}: inferred from the traces: {r.strategy_evidence}"
        for r in rows
        if r.strategy_source == "inferred" and r.strategy_evidence
    ]
    found = findings_lines(doc.findings)
    checked = checked_lines(doc.predictions_checked)
    body = [*lines, "", *said, *([""] if said else []), *_legend(), *checked, *found]
    return "\n".join(body) + "\n"


def diff(runs: Runs, a: StepSelection | None, b: StepSelection | None) -> str:
    return diff_table(diff_document(runs, a, b)) + WORDS


def critical_path(runs: Runs, steps: StepSelection | None) -> str:
    return critical_path_table(path_document(runs, steps)) + WORDS
