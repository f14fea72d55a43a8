"""One renderer per output format — as_table, as_json, as_csv — each rendering what every
command computed; `common` holds what they share (units, the rows of a rank, the calls)."""

from __future__ import annotations

from typing import Protocol

from traceview.cli.steps import StepSelection
from traceview.loader import Runs


class Reporter(Protocol):
    """What each format module provides: one function per command, over the loaded runs."""

    def analyze(self, runs: Runs, steps: StepSelection | None, per_rank: bool = False) -> str: ...
    def collectives(self, runs: Runs, steps: StepSelection | None) -> str: ...
    def ranks(self, runs: Runs) -> str: ...
    def compare(self, runs: Runs, memory_budget_bytes: float | None = None) -> str: ...
    def diff(self, runs: Runs, a: StepSelection | None, b: StepSelection | None) -> str: ...
    def critical_path(self, runs: Runs, steps: StepSelection | None) -> str: ...


def reporter(output_format: str) -> Reporter:
    return FORMATS[output_format]


# Below the protocol: the modules import this package's `common` as they load.
from traceview.cli.reporters import as_csv, as_json, as_table  # noqa: E402

FORMATS: dict[str, Reporter] = {"table": as_table, "json": as_json, "csv": as_csv}
