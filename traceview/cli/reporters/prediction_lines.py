"""The table's lines for the predictions checked against measured runs (docs/metrics.md
"Predictions checked")."""

from __future__ import annotations

from traceview.documents import structs as d
from traceview.documents.words import prediction_checked_said


def checked_lines(checked: list[d.CheckedPrediction]) -> list[str]:
    if not checked:
        return []
    return ["", "predictions checked against measured runs:"] + [
        f"  {prediction_checked_said(c)}" for c in checked
    ]
