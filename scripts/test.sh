#!/usr/bin/env bash
# Set up (if needed) and run the test suite. Extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
"${TRACEVIEW_VENV:-.venv}/bin/python" -m pytest "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "test: pytest collected no tests; treating that as a failure" >&2
  exit 1
fi
exit "$status"
