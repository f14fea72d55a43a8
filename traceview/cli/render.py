"""Rank reports -> the stable JSON document, CSV rows, or a readable table."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from traceview import __version__
from traceview.analysis import Breakdown, RankReport
from traceview.analysis.breakdown import METRICS
from traceview.cli.steps import StepSelection
from traceview.cli.text import aligned
from traceview.runner import Failure

SCHEMA_VERSION = 1
PARTIAL = " (partial)"  # after the step of a trace cut short that may be missing work


def _us(ns: int | None) -> float | None:
    return None if ns is None else ns / 1000.0


def breakdown_json(b: Breakdown) -> dict[str, Any]:
    out: dict[str, Any] = {f"{m}_us": _us(b.ns(m)) for m in METRICS}
    out["overlap_pct"] = b.overlap_pct
    return out


def caveats(r: RankReport) -> str:
    """The rank's notes that say a figure may mislead, on one line."""
    return " | ".join(n.message for n in r.notes if n.caveat)


def rank_json(r: RankReport, steps: StepSelection | None) -> dict[str, Any]:
    return {
        "trace": str(r.trace),
        "rank": r.rank,
        "world_size": r.world_size,
        "backend": r.backend,
        "mode": r.mode,
        "size_bytes": r.size_bytes,
        "truncated": r.truncated,
        "notes": [{"severity": n.severity, "message": n.message} for n in r.notes],
        "total": breakdown_json(r.total) if r.total else None,
        "steps": _before_json(r, steps)
        + [
            {
                "step": s.step,
                "before_first_step": False,
                "partial": s.partial,
                **breakdown_json(s.breakdown),
            }
            for s in r.steps
            if steps is None or s.step in steps
        ],
        "collectives": [
            {
                "collective": c.collective,
                "count": c.count,
                "total_us": _us(c.total_ns),
                "bytes": c.bytes,
                "bytes_known": c.bytes_known,
            }
            for c in r.collectives
        ],
    }


def _before_json(r: RankReport, steps: StepSelection | None) -> list[dict[str, Any]]:
    """The kernels launched before the profiling window, as a step entry of their own."""
    before = r.before_first_step
    if before is None or steps is not None:
        return []
    return [
        {
            "step": None,
            "before_first_step": True,
            "kernels": before.kernels,
            **breakdown_json(before.breakdown),
        }
    ]


def _rows(
    r: RankReport, steps: StepSelection | None, before: str, partial: str = ""
) -> list[tuple[str, Breakdown]]:
    """(label, breakdown) per row of one rank: before the first step, each step, the total."""
    rows: list[tuple[str, Breakdown]] = []
    if r.before_first_step is not None and steps is None:
        rows.append((before, r.before_first_step.breakdown))
    rows += [
        (f"{s.step}{partial if s.partial else ''}", s.breakdown)
        for s in r.steps
        if steps is None or s.step in steps
    ]
    if r.total:
        rows.append(("total", r.total))
    return rows


def to_json(
    reports: Sequence[RankReport], failures: Sequence[Failure], steps: StepSelection | None
) -> str:
    doc = {
        "traceview_version": __version__,
        "schema_version": SCHEMA_VERSION,
        "ranks": [rank_json(r, steps) for r in reports],
        "errors": [{"path": str(f.path), "message": f.message} for f in failures],
    }
    return json.dumps(doc, indent=2) + "\n"


CSV_COLUMNS = [
    "trace",
    "rank",
    "world_size",
    "step",
    *(f"{m}_us" for m in METRICS),
    "overlap_pct",
    "caveats",
]


def to_csv(reports: Sequence[RankReport], steps: StepSelection | None) -> str:
    """One row per rank and step (the first, "before_first_step", for kernels launched before
    the profiling window), then one row per rank with step "total"."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in reports:
        for step, b in _rows(r, steps, "before_first_step"):
            metrics = breakdown_json(b)
            writer.writerow(
                [str(r.trace), _blank(r.rank), _blank(r.world_size), step]
                + [
                    _blank(v if v is None else f"{v:.3f}")
                    for v in (metrics[f"{m}_us"] for m in METRICS)
                ]
                + [_blank(None if b.overlap_pct is None else round(b.overlap_pct, 3))]
                + [caveats(r)]
            )
    return buf.getvalue()


def _blank(value: object) -> object:
    return "" if value is None else value


_HEAD = (
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


def to_table(reports: Sequence[RankReport], steps: StepSelection | None) -> str:
    return "\n".join(_rank_table(r, steps) for r in reports)


def _rank_table(r: RankReport, steps: StepSelection | None) -> str:
    who = "rank unknown" if r.rank is None else f"rank {r.rank}"
    if r.world_size is not None:
        who += f" of {r.world_size}"
    lines = [
        f"{who} · {r.backend or 'backend unknown'} · {r.mode} · {r.trace} "
        f"({r.size_bytes / 1e6:,.1f} MB)"
    ]
    rows = _rows(r, steps, "before first step", PARTIAL)
    if rows:
        lines += aligned([list(_HEAD)] + [[name, *_cells(b)] for name, b in rows])
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
