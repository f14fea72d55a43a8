#!/usr/bin/env bash
# The compiled scanner (traceview/parse/_scan.c) under the sanitizers: built with
# AddressSanitizer and UndefinedBehaviorSanitizer, then the parse tests and a fuzz corpus run
# through it; built with ThreadSanitizer, then one trace scanned by several threads at once
# (scripts/scan_threads.py). Any report fails.
#
# A copy of the repository (tracked and new files) gets the sanitized build, so the working
# tree's own build is never touched. Python itself is not instrumented: the runtimes are
# preloaded, and leak checking is off (the interpreter keeps its memory until exit).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${TRACEVIEW_VENV:-.venv}"
python="$(cd "$venv/bin" && pwd)/python"  # the venv's, not the interpreter it links to
fuzz_cases="${FUZZ_CASES:-60}"  # each case runs the program 4 times (~0.6 s each here)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work" 2>/dev/null || true
rm -f "$work"/traceview/parse/_scan*.so

include="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
suffix="$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
build() {  # build SANITIZERS: the scanner into the copy, warnings as errors
  gcc -shared -fPIC -O1 -g -fno-omit-frame-pointer -std=c11 -Wall -Wextra -Werror \
    -Wno-missing-braces -ffp-contract=off -fsanitize="$1" -fno-sanitize-recover=all -I"$include" \
    traceview/parse/_scan.c -o "$work/traceview/parse/_scan$suffix" -lm
}
# What every run shares: the copy first on the path; a report ends the process with its own
# exit code; the scanner's own SIGSEGV/SIGBUS guard (a mapped file cut short) stays its own.
export PYTHONPATH="$work" PYTHONDONTWRITEBYTECODE=1
own_signals="handle_segv=0:handle_sigbus=0:allow_user_segv_handler=1"
export ASAN_OPTIONS="detect_leaks=0:exitcode=86:$own_signals"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=87"
export TSAN_OPTIONS="exitcode=88:halt_on_error=1:report_signal_unsafe=0:$own_signals"

echo "sanitize: AddressSanitizer + UndefinedBehaviorSanitizer" >&2
build address,undefined
asan="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
(
  cd "$work"
  # --capture=sys: a sanitizer's report (written to the process's stderr) stays visible; -m "":
  # every group (the fuzz test runs the commands, a `cli` test).
  LD_PRELOAD="$asan" "$python" -m pytest -q -p no:cacheprovider -m "" --capture=sys tests/parse
  LD_PRELOAD="$asan" "$python" -m pytest -q -p no:cacheprovider -m "" --capture=sys tests/cli/test_fuzz.py
  LD_PRELOAD="$asan" "$python" scripts/fuzz.py --cases "$fuzz_cases"
)

echo "sanitize: ThreadSanitizer, one trace scanned by three threads at once" >&2
build thread
(
  cd "$work"  # polars cannot load under ThreadSanitizer: this drives the scanner alone
  LD_PRELOAD="$(gcc -print-file-name=libtsan.so)" "$python" scripts/scan_threads.py
)
echo "sanitize: no reports" >&2
