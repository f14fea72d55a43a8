"""Fuzz traceview for as long as you like: mutated real traces (tests/mutate.py), each run by
`traceview` as its own process with a time limit, counting crashes, hangs and peak memory.

    .venv/bin/python scripts/fuzz.py --cases 2000            # about 20 minutes on 2 cores
    .venv/bin/python scripts/fuzz.py --cases 200 --keep out/  # keep the inputs that failed

A crash is an exit code other than 0, 1 or 2, a traceback on stderr, or more than 10 lines of
it; a hang is a run past --timeout. The CI runs a bounded number of the same mutations in
process (tests/cli/test_fuzz.py); this script is for the long runs.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.mutate import mutant, seeds  # noqa: E402

COMMANDS = (
    ["analyze", "{path}", "--format", "json"],
    ["collectives", "{path}"],
    ["ranks", "{path}"],
    ["critical-path", "{path}", "--format", "json"],
    ["export", "{path}", "-o", "{out}"],
)


def run_one(args: list[str], timeout: float) -> tuple[int | None, str, float]:
    """(exit code, or None when killed for time; stderr; wall seconds)."""
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "traceview", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None, "", time.monotonic() - start
    return proc.returncode, err.decode("utf-8", "replace"), time.monotonic() - start


def _children_peak_mb() -> float:
    """The largest peak RSS of any run so far (the OS keeps it for reaped children)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--cases", type=int, default=500, help="mutated traces to try")
    p.add_argument("--seed", type=int, default=0, help="first random seed (case i uses seed+i)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per run before a hang")
    p.add_argument("--keep", type=Path, help="copy each failing input here")
    args = p.parse_args()
    base = seeds()
    crashes = hangs = runs = 0
    slowest = 0.0
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "trace.json", Path(tmp) / "timeline.json"
        for i in range(args.cases):
            what, data = mutant(random.Random(args.seed + i), base)
            path.write_bytes(data)
            for template in COMMANDS:
                command = [a.format(path=path, out=out) for a in template]
                code, err, wall = run_one(command, args.timeout)
                runs += 1
                slowest = max(slowest, wall)
                lines = err.splitlines()
                if code is None:
                    hangs += 1
                    problem = f"hang (over {args.timeout:.0f} s)"
                elif code not in (0, 1, 2) or "Traceback" in err or len(lines) > 10:
                    crashes += 1
                    problem = f"crash (exit {code}): {lines[-1] if lines else ''}"
                else:
                    continue
                print(f"case {args.seed + i} [{what}] {command[0]}: {problem}", flush=True)
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, args.keep / f"case{args.seed + i}.json")
            if (i + 1) % 50 == 0:
                print(
                    f"{i + 1} of {args.cases} cases, {crashes} crashes, {hangs} hangs", flush=True
                )
    print(
        f"cases {args.cases}, runs {runs}, crashes {crashes}, hangs {hangs}, "
        f"slowest run {slowest:.1f} s, peak memory of a run {_children_peak_mb():.0f} MB, "
        f"{time.monotonic() - started:.0f} s in all"
    )
    return 1 if crashes or hangs else 0


if __name__ == "__main__":
    sys.exit(main())
