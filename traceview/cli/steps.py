"""`--steps 3,5-7` read into a StepSelection."""

from __future__ import annotations

import argparse

from traceview.documents import StepSelection
from traceview.documents.steps import parse_steps as parse


def parse_steps(text: str) -> StepSelection:
    try:
        return parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
