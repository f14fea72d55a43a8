#!/usr/bin/env bash
# Create .venv and install traceview with everything the harness, dashboard and tests use.
# Re-running is cheap: nothing is reinstalled unless pyproject.toml, constraints.txt or the
# compiled part (setup.py, traceview/parse/_scan.c) changed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${TRACEVIEW_VENV:-.venv}"
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv" >&2
  python3 -m venv "$venv"
fi
stamp="$venv/.traceview-installed"
want="$(cat pyproject.toml constraints.txt setup.py traceview/parse/_scan.c | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing traceview and its dependencies into $venv (torch CPU build: a few minutes the first time)" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[harness,dashboard,dev]' -c constraints.txt
  echo "$want" > "$stamp"
fi
