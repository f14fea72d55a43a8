"""Fuzzing on every CI run (a bounded number of examples; scripts/fuzz.py runs longer): mutated
real traces get an exit code of 0, 1 or 2 and a few lines of stderr, never a traceback."""

from __future__ import annotations

import contextlib
import io
import resource
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.mutate import mutant, seeds
from traceview.cli import main

SEEDS = seeds()
PEAK_RSS_BOUND_MB = 2048  # over the whole run: a mutant that makes memory blow up fails
# Each seed reads in well under a second: a mutant taking this long is work out of bound (a
# buried syntax error once took minutes to refuse, each nested boundary tried in turn).
CPU_BOUND_S = 20


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_mutated_traces_get_an_answer_not_a_traceback(rng):
    what, data = mutant(rng, SEEDS)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        path.write_bytes(data)
        for command in (["analyze", str(path), "--format", "json"], ["collectives", str(path)]):
            err = io.StringIO()
            began = time.process_time()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code = main(command)
            assert time.process_time() - began < CPU_BOUND_S, (what, command[0])
            lines = err.getvalue().splitlines()
            assert code in (0, 1, 2), (what, command[0], lines)
            assert len(lines) <= 10 and all(line.startswith("traceview: ") for line in lines), (
                what,
                lines,
            )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert peak_mb < PEAK_RSS_BOUND_MB, what
