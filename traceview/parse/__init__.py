"""Bytes -> typed tables. No metrics here."""

from traceview.parse.metadata import TraceMeta
from traceview.parse.trace import Trace, read_trace

__all__ = ["Trace", "TraceMeta", "read_trace"]
