"""The table's lines for the bandwidth against the link's peak (docs/metrics.md "Against the
link's peak")."""

from __future__ import annotations

from traceview.cli.reporters.common import aligned
from traceview.documents import structs as d
from traceview.documents.words import link_said


def link_lines(job: d.JobCalls) -> list[str]:
    link = job.link
    if link is None:
        return [f"  {link_said(None, None, None, None, job.no_link_reason)}"]
    lines = [f"  {link_said(link.name, link.peak_gbps, link.scope, link.basis, None)}"]
    rows = [["collective", "size", "calls", "busbw GB/s (median)", "% of peak"]]
    for r in job.against_peak:
        bound = "≥ " if r.lower_bound else ""
        rows.append([r.collective or "?", f"{r.bytes:,}", str(r.calls),
                     f"{bound}{r.busbw_gbps:,.2f}", f"{bound}{r.peak_pct:.1f}%"])  # fmt: skip
    return lines + aligned(rows, indent="    ") if len(rows) > 1 else lines
