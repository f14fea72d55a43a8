"""Fuzzing on every CI run (a bounded number of examples; scripts/fuzz.py runs longer): mutated
real traces get an exit code of 0, 1 or 2 and a few lines of stderr, never a traceback. The
commands run in a worker process of their own, so its peak memory is theirs alone."""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import resource
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.mutate import mutant, seeds

SEEDS = seeds()
PEAK_RSS_BOUND_MB = 2048  # over all the cases: a mutant that makes memory blow up fails
# Each seed reads in well under a second: a mutant taking this long is work out of bound (a
# buried syntax error once took minutes to refuse, each nested boundary tried in turn).
CPU_BOUND_S = 20
COMMANDS = (["analyze", "{path}", "--format", "json"], ["collectives", "{path}"])


def run_commands(data: bytes) -> list[tuple[int, float, list[str]]]:
    """In the worker: each command on `data`, as (exit code, CPU seconds, stderr lines)."""
    from traceview.cli import main

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        path.write_bytes(data)
        for command in COMMANDS:
            err = io.StringIO()
            began = time.process_time()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code = main([a.format(path=path) for a in command])
            out.append((code, time.process_time() - began, err.getvalue().splitlines()))
    return out


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.fixture(scope="module")
def worker() -> Iterator[ProcessPoolExecutor]:
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as pool:
        yield pool
        assert pool.submit(peak_mb).result() < PEAK_RSS_BOUND_MB


@pytest.mark.cli  # the commands, in a worker process of their own
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.randoms(use_true_random=False))
def test_mutated_traces_get_an_answer_not_a_traceback(worker, rng):
    what, data = mutant(rng, SEEDS)
    for command, (code, cpu_s, lines) in zip(
        COMMANDS, worker.submit(run_commands, data).result(), strict=True
    ):
        assert cpu_s < CPU_BOUND_S, (what, command[0])
        assert code in (0, 1, 2), (what, command[0], lines)
        assert len(lines) <= 10 and all(line.startswith("traceview: ") for line in lines), (
            what,
            lines,
        )
