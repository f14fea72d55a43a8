#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite: every group (pyproject.toml's markers; plain
# `pytest` runs the unit tests alone). Extra arguments go to pytest.
#   --quick   the unit tests alone, as plain `pytest` runs them
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
groups=(-m "")  # every group: over pyproject.toml's default, the unit tests alone
args=()
for a in "$@"; do
  if [ "$a" = "--quick" ]; then groups=(); else args+=("$a"); fi
done
"${TRACEVIEW_VENV:-.venv}/bin/python" -m pytest "${groups[@]}" "${args[@]}"
status=$?
if [ "$status" -eq 5 ]; then
  echo "test: pytest collected no tests; treating that as a failure" >&2
  exit 1
fi
exit "$status"
