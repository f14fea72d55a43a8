"""One module per command: its options and what it does, over the front door (traceview.load)
and the renderers (cli/reporters)."""

from traceview.cli.commands import (
    analyze,
    collectives,
    compare,
    critical_path,
    dashboard,
    diff,
    export,
    ingest,
    pack,
    ranks,
    report,
)

COMMANDS = (
    analyze, collectives, ranks, critical_path, compare, diff, export, report, ingest, pack,
    dashboard,
)  # fmt: skip
