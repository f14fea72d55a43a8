"""`traceview report`: one self-contained HTML document to send — a title, contents, a summary
table across runs with units and noise flags, findings, caveats, the scaling charts, and per run
its overlap per rank and step, its most exposed collectives, one step's timeline and its memory
beside the theory. The charting scripts are inline: it opens with no server and no network."""

from __future__ import annotations

import datetime
import html
import os
from collections.abc import Sequence
from pathlib import Path

import altair as alt
import msgspec
import polars as pl

from traceview import (
    NO_FINDINGS,
    Job,
    Runs,
    ScalingRow,
    TraceviewError,
    __version__,
)
from traceview.documents.words import SCALING_LEGEND, job_said
from traceview.plain import GLOSSARY, UNKNOWN, counted
from traceview.presentation import charts, critical_path, overview, spread, stragglers
from traceview.presentation.desync import desync_words
from traceview.presentation.frames import (
    CHECKED_NOTE,
    NEEDS_A_RECORD,
    calls_frame,
    caveat_lines,
    checked_lines,
    link_words,
    memory_frame,
    overlap_frame,
    prediction_frame,
    rank_label,
    scaling_frame,
    size_words,
    withheld_lines,
)
from traceview.presentation.lanes import row_order, timeline_frame
from traceview.presentation.overlap_tax import TAX_COLUMNS, tax_frame, tax_words
from traceview.report import diff_section
from traceview.report.htmlpage import html_page, table_html

# The ranks whose intervals are kept while parsing, for the timeline: every rank of a job the
# timeline draws whole; of a larger one the ranks it draws are read again when drawn.
TIMELINE_RANKS = overview.SHOWN_AT_ONCE

CHART_WIDTH = 900  # px: the page's text width, what a chart's bars are reduced to
MOST_EXPOSED = 8

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 980px; margin: 2em auto; padding: 0 1em;
       color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em;
margin-top: 2em; } table { border-collapse: collapse; font-size: 0.88em; margin: 0.8em 0; }
th, td { padding: 0.25em 0.6em; border-bottom: 1px solid #eee; text-align: right; }
th { background: #f6f6f6; white-space: normal; } td.name, th.name { text-align: left; }
td.wrap { text-align: left; min-width: 10em; }
.meta { color: #666; } .flag { color: #b22222; } .finding { margin: 0.5em 0; }
nav ol { columns: 2; } .chart { width: 100%; margin: 0.5em 0 1.5em; }
"""


class _Doc(msgspec.Struct):
    """The document as it is written: HTML parts, and the charts to embed by id."""

    parts: list[str] = msgspec.field(default_factory=list)
    specs: list[dict[str, object]] = msgspec.field(default_factory=list)

    def add(self, text: str) -> None:
        self.parts.append(text)

    def chart(self, chart: alt.TopLevelMixin) -> None:
        self.add(f'<div class="chart" id="chart{len(self.specs)}"></div>')
        # The data is inline in the file: no row limit (the timeline is bounded upstream).
        with alt.data_transformers.enable("default", max_rows=None):
            self.specs.append(chart.to_dict())


def _e(value: object) -> str:
    return html.escape(str(value))


def _root(runs: Runs) -> str:
    """The folder the runs share, which their names are said relative to."""
    full = [os.path.abspath(job.name) for job in runs.jobs]
    return os.path.commonpath(full) if len(full) > 1 else os.path.dirname(full[0]) if full else ""


def _names(runs: Runs) -> dict[str, str]:
    """Each run's name relative to what the runs share (a sweep's run: 'ddp-dp2')."""
    root = _root(runs)
    names = {}
    for job in runs.jobs:
        where = Path(os.path.relpath(os.path.abspath(job.name), root))
        names[job.name] = str(where.parent / job_said(str(where), whole=False))
    return names


def _anchor(i: int) -> str:
    return f"run-{i}"


def _num(value: float | None, spec: str) -> str:
    return UNKNOWN if value is None else format(value, spec)


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def _narrow(beside_theory: str) -> str:
    """A figure beside its theory, the 'as run' line under it: the table fits the page."""
    return _e(beside_theory).replace("; as run", ";<br>as run")


def _summary_rows(rows: list[ScalingRow], names: dict[str, str], anchors: dict[str, str]):
    out = []
    for r in rows:
        spread = (
            f"{_num(r.step_seconds, '.3f')} ({r.step_seconds_min:.3f}–{r.step_seconds_max:.3f})"
            if r.step_seconds_min is not None and r.step_seconds_max is not None
            else _num(r.step_seconds, ".3f")
        )
        flags = "; ".join(r.caveats)
        link = f'<a href="#{anchors[r.job]}">{_e(names.get(r.job, r.job))}</a>'
        out.append(
            [
                link,
                _e(r.strategy_said),
                _num(r.dp, "d"),
                spread,
                _num(r.samples_per_s, ",.1f"),
                _num(r.efficiency, ".2f"),
                _num(_scaled(r.exposed_comm_fraction, 100), ".1f"),
                _narrow(r.traffic_text),
                _narrow(r.comm_volume_text),
                f"{_num(_scaled(r.model_state_bytes, 1e-6), ',.1f')} "
                f"({_num(_scaled(r.model_state_theory_bytes, 1e-6), ',.1f')})",
                f'<span class="flag">{_e(flags)}</span>' if flags else "",
            ]
        )  # fmt: skip
    return out


_SUMMARY_HEAD = [
    "run", "strategy", "DP", "step s (min–max)", "samples/s", "E(N)", "exposed comm %",
    "traffic Ψ (theory)", "buffers Ψ (theory)", "model states MB (theory)", "noise and caveats",
]  # fmt: skip


def _most_exposed(calls: pl.DataFrame) -> str:
    share = pl.col("exposed_share_us")
    if calls.height == 0 or calls.select(share.sum()).item() == 0:
        return "<p>No collective left exposed.</p>"
    # Each call's share of the exposed time: concurrent calls once, so the rows add up to the
    # exposed communication and none exceeds the time traced.
    calls = calls.with_columns(exposed_share_ms=share / 1e3)
    total_ms = float(calls["exposed_share_ms"].sum())
    # An FSDP module has an all-gather and a reduce-scatter: each is its own row, named.
    named = pl.col("label").str.starts_with("bucket ") | (pl.col("label") == pl.col("collective"))
    calls = calls.with_columns(
        label=pl.when(named).then("label").otherwise(pl.format("{} {}", "collective", "label"))
    )
    top = (
        calls.group_by("label")
        .agg(
            calls=pl.len(),
            exposed_ms=pl.col("exposed_share_ms").sum(),
            size=pl.col("bytes").median(),
        )
        .sort("exposed_ms", descending=True)
        .head(MOST_EXPOSED)
    )
    rows = [
        [_e(label), str(n), f"{ms:,.3f}", f"{100 * ms / total_ms:.1f}",
         _e(size_words(None if size is None else int(size)))]
        for label, n, ms, size in top.select("label", "calls", "exposed_ms", "size").iter_rows()
    ]  # fmt: skip
    head = ["bucket, module or collective", "calls", "exposed ms", "% of exposed", "median size"]
    return table_html(head, rows) + (
        "<p class=meta>Exposed ms: each call's time with no compute beside it that no call "
        "started before it already covers (concurrent calls counted once), over every rank.</p>"
    )


def _timeline(doc: _Doc, job: Job) -> None:
    steps = sorted({s.step for r in job.ranks for s in r.steps})
    if not steps:
        doc.add("<p>No profiler steps in these traces (ProfilerStep#N): no step to draw.</p>")
        return
    step = steps[len(steps) // 2]
    try:
        frame, joined = timeline_frame(
            job, step, width_px=CHART_WIDTH, ranks=overview.default_ranks(job, step)
        )
    except TraceviewError as e:
        doc.add(f"<p>Timeline left out: {_e(e.message)}.</p>")
        return
    shown = sorted(frame["rank"].unique().to_list(), key=lambda r: (r is None, r or 0))
    ranks = ", ".join(rank_label(r) for r in shown)
    more = (
        f" (of {len(job.ranks)} ranks, the slowest, the median and the fastest at this step)"
        if len(shown) < len(job.ranks)
        else ""
    )
    doc.add(f"<p class=meta>Step {step}: {_e(ranks)}{more}.")
    if joined:
        doc.add(" Work closer together than one pixel is drawn as one bar: `traceview export` "
                "has every interval.")  # fmt: skip
    doc.add("</p>")
    doc.chart(charts.timeline_chart(frame, row_order(frame)))


def _drawn_ranks(
    frame: pl.DataFrame, doc: _Doc, chosen: Sequence[int | None], of: int, which: str
) -> pl.DataFrame:
    """A per-rank frame cut to the ranks `chosen` (`which` says how they were chosen) where the
    job has more than the page can draw side by side, said when it is cut."""
    if of <= overview.SHOWN_AT_ONCE or frame.height == 0:
        return frame
    named = ", ".join(rank_label(r) for r in chosen)
    doc.add(f"<p class=meta>Of {of} ranks: {_e(named)} ({_e(which)}); every rank's numbers: "
            "<code>traceview analyze --per-rank</code>.</p>")  # fmt: skip
    return frame.filter(pl.col("rank").is_in([r for r in chosen if r is not None]))


def _overview(doc: _Doc, job: Job) -> None:
    """A job of many ranks: every rank and step in one chart (exposed communication where the
    traces measure it, else the step time)."""
    frame = overview.rank_step_frame(job)
    measure = "exposed communication" if frame["exposed_ms"].is_not_null().any() else "step time"
    cells = overview.heat_cells(frame, len(job.ranks), overview.MEASURES[measure])
    if cells.height:
        doc.add("<h3>Every rank at a glance</h3>")
        doc.chart(overview.heat_map_chart(cells, len(job.ranks), measure, clickable=False))


def _stragglers(doc: _Doc, job: Job) -> None:
    waited_for = stragglers.of(job)
    if waited_for is None:
        return
    doc.add("<h3>Who the ranks waited for</h3>")
    points, per_point = stragglers.straggler_frame(waited_for)
    doc.add(f"<p>{_e(stragglers.said(waited_for) + stragglers.binned_words(per_point))}</p>")
    if points.height:
        doc.chart(stragglers.straggler_chart(points))


def _desync(doc: _Doc, job: Job) -> None:
    checked = desync_words(job)
    if checked is None:
        return
    summary, signs = checked
    doc.add("<h3>Do the ranks' collectives line up?</h3>")
    doc.add(f"<p>{_e(summary)}</p>")
    if signs:
        doc.add("<ul>" + "".join(f"<li>{_e(s)}</li>" for s in signs) + "</ul>")


# The overlap tax table's rows at most: the most taxed ranks.
_TAX_ROWS = 16


def _overlap_tax(doc: _Doc, job: Job) -> None:
    words = tax_words(job)
    if words is None:
        return
    doc.add("<h3>The overlap tax: compute slowed beside communication</h3>")
    doc.add(f"<p>{_e(words[0].upper() + words[1:])}.</p>")
    frame = tax_frame(job)
    if len(job.ranks) == 1 or frame["pairs"].sum() == 0:
        return
    shown = frame.head(_TAX_ROWS)
    if frame.height > _TAX_ROWS:
        doc.add(f"<p class=meta>The {_TAX_ROWS} ranks most taxed a step, of {frame.height}.</p>")
    head = [TAX_COLUMNS[c][0] for c in shown.columns]
    rows = [
        [_e(UNKNOWN if v is None else (spec.format(v) if spec else v))
         for v, (_, spec) in zip(row, TAX_COLUMNS.values(), strict=True)]
        for row in shown.iter_rows()
    ]  # fmt: skip
    doc.add(table_html(head, rows, wrap_last=True))


def _run_section(doc: _Doc, i: int, job: Job, name: str) -> None:
    doc.add(f'<h2 id="{_anchor(i)}">{_e(name)}</h2>')
    first = job.ranks[0]
    said = [job.strategy or "strategy unknown", counted(len(job.ranks), "rank trace"),
            first.backend or "backend unknown", first.mode]  # fmt: skip
    doc.add(f"<p class=meta>{_e(' · '.join(said))} · {_e(job.name)}</p>")
    if overview.many_ranks(job):
        _overview(doc, job)
    doc.add("<h3>Overlap per rank and step</h3>")
    chosen = [job.ranks[at].rank for at in overview.default_ranks(job)]
    which = "the slowest, the median and the fastest by their median step"
    overlap = _drawn_ranks(overlap_frame(job), doc, chosen, len(job.ranks), which)
    overlap, per_bar = overview.binned_steps(overlap)
    if per_bar > 1:
        doc.add(f"<p class=meta>Each bar is the mean of {per_bar} consecutive steps: too many to "
                "draw one by one (<code>traceview analyze</code> lists each).</p>")  # fmt: skip
    if overlap.height:
        doc.chart(charts.overlap_chart(overlap))
    elif any(r.steps for r in job.ranks):
        doc.add("<p>No step's window split: these traces do not measure communication.</p>")
    else:
        doc.add("<p>No profiler steps in these traces (ProfilerStep#N).</p>")
    _overlap_tax(doc, job)
    _stragglers(doc, job)
    _desync(doc, job)
    for part in critical_path.report_parts(job):
        doc.add(part) if isinstance(part, str) else doc.chart(part)
    doc.add("<h3>Most exposed collectives</h3>")
    calls = calls_frame(job)
    doc.add(_most_exposed(calls))
    doc.add("<h3>One step's timeline</h3>")
    _timeline(doc, job)
    memory = memory_frame(job)
    if memory.height:
        doc.add("<h3>Model states beside the ZeRO theory</h3>")
        held = overview.ranks_by_memory(memory)
        which = "the one holding the most, the median and the least"
        memory = _drawn_ranks(memory, doc, overview.ends_and_middle(held), len(held), which)
        doc.chart(charts.memory_chart(memory))
    if calls.height and calls["mb"].drop_nulls().len():
        doc.add("<h3>Collectives: size and duration</h3>")
        doc.chart(spread.size_chart(calls))
    if calls.height:
        link, why = job.link
        doc.add(f"<p>{_e(link_words(link, why, capital=True))}.</p>")
        peak = job.against_peak()
        if peak.height:
            doc.add(table_html(["collective", "size bytes", "calls", "bus bandwidth GB/s (median)",
                            "% of the link's peak"],
                           [[r["collective"] or "?", f"{r['bytes']:,}", str(r["calls"]),
                             ("≥ " if r["lower_bound"] else "") + f"{r['busbw_gbps']:,.2f}",
                             ("≥ " if r["lower_bound"] else "") + f"{r['peak_pct']:.1f}"]
                            for r in peak.iter_rows(named=True)]))  # fmt: skip


def report_html(runs: Runs, title: str = "traceview report") -> str:
    doc = _Doc()
    names = _names(runs)
    anchors = {job.name: _anchor(i) for i, job in enumerate(runs.jobs)}
    rows = runs.scaling()
    found = runs.findings()
    # Each once: a run's own caveats sit beside its row of the summary.
    caveats = caveat_lines(runs, root=_root(runs), with_rows=False)
    # SOURCE_DATE_EPOCH (the reproducible-builds convention) fixes the stamp: then the same
    # input gives the same file, byte for byte.
    stamp = os.environ.get("SOURCE_DATE_EPOCH")
    at = (
        datetime.datetime.fromtimestamp(int(stamp), datetime.timezone.utc)
        if stamp and stamp.isdigit()
        else datetime.datetime.now(datetime.timezone.utc)
    )
    when = at.strftime("%Y-%m-%d %H:%M UTC")
    traces = sum(len(j.ranks) for j in runs.jobs)
    doc.add(f"<h1>{_e(title)}</h1>")
    doc.add(f"<p class=meta>{counted(len(runs.jobs), 'run')}, {counted(traces, 'rank trace')} "
            f"· traceview {_e(__version__)} · {when} · the words used: {GLOSSARY}</p>")  # fmt: skip
    contents = ['<a href="#summary">Summary</a>', '<a href="#findings">Findings</a>']
    contents += ['<a href="#caveats">Caveats</a>'] if caveats else []
    contents += ['<a href="#scaling">Scaling</a>']
    contents += [f'<a href="#{diff_section.ANCHOR}">B against A</a>'] if len(runs.jobs) == 2 else []
    contents += [
        f'<a href="#{_anchor(i)}">{_e(names[j.name])}</a>' for i, j in enumerate(runs.jobs)
    ]
    doc.add(
        "<nav><h2>Contents</h2><ol>" + "".join(f"<li>{c}</li>" for c in contents) + "</ol></nav>"
    )
    doc.add('<h2 id="summary">Summary</h2>')
    doc.add(table_html(_SUMMARY_HEAD, _summary_rows(rows, names, anchors), names=2, wrap_last=True))
    doc.add(
        "<p class=meta>"
        + "<br>".join(f"<b>{_e(name)}</b>: {_e(said)}" for name, said in SCALING_LEGEND)
        + "</p>"
    )
    doc.add('<h2 id="findings">Findings</h2>')
    if found:
        doc.add("".join(
            f'<div class="finding"><b>{_e(names.get(f.job, Path(f.job).name))}</b>: '
            f"{_e(f.what)}<br>→ {_e(f.action)}</div>" for f in found
        ))  # fmt: skip
    else:
        doc.add(f"<p>{_e(NO_FINDINGS)}.</p>")
    if caveats:
        doc.add('<h2 id="caveats">Caveats</h2><ul class="flag">')
        doc.add("".join(f"<li>{_e(line)}</li>" for line in caveats) + "</ul>")
    doc.add('<h2 id="scaling">Scaling</h2>')
    scaling = scaling_frame(runs)
    if scaling.height:
        scaling = scaling.with_columns(pl.col("job").replace(names))
    measured = scaling.filter(pl.col("efficiency").is_not_null()) if scaling.height else scaling
    if measured.height:
        doc.chart(charts.efficiency_chart(measured, prediction_frame(runs)))
        for line in withheld_lines(runs):
            doc.add(f"<p>{_e(line.capitalize())}.</p>")
        if checked := checked_lines(runs):
            doc.add("<h3>Predictions checked against measured runs</h3><ul>")
            doc.add("".join(f"<li>{_e(line)}</li>" for line in checked) + "</ul>")
            doc.add(f"<p class=meta>{_e(CHECKED_NOTE)}</p>")
        doc.chart(charts.throughput_chart(measured))
        doc.chart(charts.exposed_chart(scaling))
    elif scaling.height:
        doc.add(f"<p>{_e(NEEDS_A_RECORD)}</p>")
        timed = scaling.filter(pl.col("step_seconds").is_not_null())
        if timed.height:
            doc.chart(charts.step_time_chart(timed))
        exposed = scaling.filter(pl.col("exposed_comm_fraction").is_not_null())
        if exposed.height:
            doc.chart(charts.exposed_chart(exposed, by_run=True))
    if len(runs.jobs) == 2:  # a before and an after: where the step's time went between them
        doc.add(diff_section.section(runs, names))
    for i, job in enumerate(runs.jobs):
        _run_section(doc, i, job, names[job.name])
    return html_page(title, _STYLE, doc.parts, doc.specs)
