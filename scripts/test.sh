#!/usr/bin/env bash
# Set up (if needed) and run the test suite. Extra arguments go to pytest.
#   --quick   skip the tests marked slow (real torchrun jobs, the browser): about a third of the time
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
args=()
for a in "$@"; do
  if [ "$a" = "--quick" ]; then args+=(-m "not slow"); else args+=("$a"); fi
done
"${TRACEVIEW_VENV:-.venv}/bin/python" -m pytest "${args[@]}"
status=$?
if [ "$status" -eq 5 ]; then
  echo "test: pytest collected no tests; treating that as a failure" >&2
  exit 1
fi
exit "$status"
