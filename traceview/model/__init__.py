"""The one data model: intervals of compute, communication and memory work per rank."""

from traceview.model.timeline import Timeline, build_timeline, build_timelines, model_rows

__all__ = ["Timeline", "build_timeline", "build_timelines", "model_rows"]
