"""What a trace cut short lost, in the terms of its steps: which steps may miss work, and how
much of the profiled time has no device work left. (Kineto writes the CPU events first and the
device work after them in time order, so a cut loses the device work of the last stretch.)"""

from __future__ import annotations

import polars as pl

from traceview.analysis.windows import StepBreakdown
from traceview.errors import Note
from traceview.model import Timeline


def partial_steps(timeline: Timeline, steps: list[StepBreakdown]) -> tuple[set[int], Note]:
    """For a truncated trace: the steps that may be missing work, and a caveat saying how much
    of the profile the cut took."""
    spans = timeline.step_spans
    work = timeline.intervals.filter(pl.col("kind") != "other")
    last = max((s.step for s in steps), default=None)
    if timeline.mode != "gpu" or spans.height == 0 or work.height == 0:
        partial = set() if last is None else {last}
        which = f"step {last} is the last read and may be partial" if partial else "no step read"
        return partial, Note(message=f"the trace is cut short: {which}", severity="caveat")
    device_end = int(work["end_ns"].max())  # type: ignore[arg-type]
    first, end = int(spans["span_start_ns"].min()), int(spans["span_end_ns"].max())  # type: ignore[arg-type]
    partial = {int(s) for s, e in spans.select("step", "span_end_ns").iter_rows() if e > device_end}
    if last is not None:
        partial.add(last)  # its kernels may run past the cut even if its span ended before it
    missing = max(0, end - device_end)
    share = 100.0 * missing / (end - first) if end > first else 0.0
    listed = ", ".join(str(s) for s in sorted(partial)) or "none"
    return partial, Note(
        message=f"the trace is cut short: its device work stops {missing / 1e6:,.3f} ms "
        f"({share:.0f} % of the profiled steps' time) before its last ProfilerStep ends; "
        f"partial steps: {listed}",
        severity="caveat",
    )
