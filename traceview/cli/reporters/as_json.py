"""`--format json`: each command's document (traceview/documents), encoded; its schema is
published in docs/schema/<command>.schema.json."""

from __future__ import annotations

from traceview.documents import StepSelection, build
from traceview.documents.critical_path import critical_path as path_document
from traceview.documents.diff import diff as diff_document
from traceview.documents.publish import encode
from traceview.loader import Runs


def analyze(runs: Runs, steps: StepSelection | None, per_rank: bool = False) -> str:
    return encode(build.analyze(runs, steps))


def collectives(runs: Runs, steps: StepSelection | None) -> str:
    return encode(build.collectives(runs, steps))


def ranks(runs: Runs) -> str:
    return encode(build.ranks(runs))


def compare(runs: Runs, memory_budget_bytes: float | None = None) -> str:
    return encode(build.compare(runs, memory_budget_bytes))


def diff(runs: Runs, a: StepSelection | None, b: StepSelection | None) -> str:
    return encode(diff_document(runs, a, b))


def critical_path(runs: Runs, steps: StepSelection | None) -> str:
    return encode(path_document(runs, steps))
