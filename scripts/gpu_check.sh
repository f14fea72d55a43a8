#!/usr/bin/env bash
# The GPU acceptance check (scripts/gpu_check.py; docs/harness.md "On GPUs"): every strategy at
# every DP degree the GPUs allow, checked as traceview reads it. Without a GPU: one line, exit 0.
#   bash scripts/gpu_check.sh [--out DIR] [--preset small] [--precision bf16]
set -uo pipefail
cd "$(dirname "$0")/.."
python="${TRACEVIEW_VENV:-.venv}/bin/python"
if [ ! -x "$python" ]; then
  bash scripts/setup.sh || exit 1
fi
exec "$python" scripts/gpu_check.py "$@"
