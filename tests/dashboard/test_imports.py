"""The dashboard stands on the public API: it imports traceview itself, its own modules and the
one-line error helpers, and nothing below the loader."""

from __future__ import annotations

import ast
from pathlib import Path

DASHBOARD = Path(__file__).parents[2] / "traceview" / "dashboard"
ALLOWED = ("traceview", "traceview.errors")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_dashboard_imports_nothing_below_the_loader():
    files = sorted(DASHBOARD.rglob("*.py"))
    assert len(files) > 10
    below = {
        f"{path.relative_to(DASHBOARD)}: {name}"
        for path in files
        for name in _imports(path)
        if name.startswith("traceview")
        and name not in ALLOWED
        and not name.startswith("traceview.dashboard")
    }
    assert below == set()
