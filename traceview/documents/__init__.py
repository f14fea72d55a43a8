"""Every command's output as a typed document (`structs`), built from loaded runs (`build`),
encoded as JSON and published as JSON Schema (`publish`). The CLI, the dashboard and the
report render these; nothing below them formats a number for a reader."""

from traceview.documents.steps import StepSelection

__all__ = ["StepSelection"]
