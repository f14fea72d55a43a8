"""`--steps 3,5-7` read into a StepSelection."""

from __future__ import annotations

import argparse
import re

from traceview.documents import StepSelection
from traceview.documents.steps import INT64_MAX


def parse_steps(text: str) -> StepSelection:
    ranges = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise argparse.ArgumentTypeError(f"not a step list: {text!r} (try 3,5-7)")
        lo, hi = int(m[1]), int(m[2] or m[1])
        if hi < lo:
            raise argparse.ArgumentTypeError(f"empty step range: {part.strip()!r}")
        if lo <= INT64_MAX:
            ranges.append((lo, min(hi, INT64_MAX)))  # no step number goes past int64
    return StepSelection(tuple(ranges))
