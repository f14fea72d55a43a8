"""The one data model: intervals of compute, communication and memory work per rank."""

from traceview.model.schema import INTERVALS_SCHEMA, KIND, LANE_KIND
from traceview.model.timeline import Timeline, build_timeline, model_rows

__all__ = ["INTERVALS_SCHEMA", "KIND", "LANE_KIND", "Timeline", "build_timeline", "model_rows"]
