#!/usr/bin/env bash
# Static checks: ruff (lint and format) and mypy, as configured in pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
venv="${TRACEVIEW_VENV:-.venv}"
"$venv/bin/ruff" check .
"$venv/bin/ruff" format --check .
"$venv/bin/mypy"
"$venv/bin/mypy" instrumented_train
