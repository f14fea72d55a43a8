"""`--steps 3,5-7` read into a StepSelection, `--ranks 0,4-7` into a RankSelection."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

from traceview.documents.steps import RankSelection, StepSelection
from traceview.documents.steps import parse_ranks as read_ranks
from traceview.documents.steps import parse_steps as read_steps

T = TypeVar("T")


def _as_argument(read: Callable[[str], T], text: str) -> T:
    try:
        return read(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def parse_steps(text: str) -> StepSelection:
    return _as_argument(read_steps, text)


def parse_ranks(text: str) -> RankSelection:
    return _as_argument(read_ranks, text)
