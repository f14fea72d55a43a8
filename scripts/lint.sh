#!/usr/bin/env bash
# Static checks: ruff (lint and format), mypy, the layer contract (.importlinter) and dead code.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
venv="${TRACEVIEW_VENV:-.venv}"
"$venv/bin/ruff" check .
"$venv/bin/ruff" format --check .
"$venv/bin/mypy"
"$venv/bin/mypy" instrumented_train
"$venv/bin/lint-imports" --no-cache
# Dead code. The documents' fields are the published output (docs/schema), read by its readers.
"$venv/bin/vulture" traceview instrumented_train scripts --min-confidence 60 \
  --exclude traceview/documents/structs.py,traceview/documents/path_structs.py
