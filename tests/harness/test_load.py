"""The sweep knows when the machine is busy: the cores other processes keep busy, measured
around each run (instrumented_train/load.py), said as the sweep starts and, where ranks ×
threads plus that load exceed the cores, beside the run's E(N) (traceview compare)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import traceview
from instrumented_train.load import Meter
from tests import tracebuild as tb
from traceview.parse.run_record import MachineLoad

CORES = sorted(os.sched_getaffinity(0))
BUSY_LOOP = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass\n"


@pytest.mark.parametrize(
    "cores, ranks, threads, load, contended",
    [
        (2, 2, 1, 0.3, True),  # 2 + 0.3 > 2
        (2, 1, 1, 0.5, False),  # 1.5 fits
        (2, 2, 1, 0.05, False),  # the machine's own noise (under 0.1 core)
        (4, 2, 2, 0.1, True),  # 4 + 0.1 > 4
        (2, 2, 1, None, False),  # not known: nothing said
    ],
)
def test_contention_is_ranks_times_threads_plus_the_load_over_the_cores(
    cores, ranks, threads, load, contended
):
    assert MachineLoad(cores, load).contended(ranks, threads) is contended


@pytest.mark.torchrun
def test_a_process_the_sweep_does_not_wait_for_is_other_work():
    # A busy loop on one core, not yet waited for, is another process's load; once waited
    # for (as the sweep waits for a run's torchrun) its time is the sweep's own.
    meter = Meter(CORES)
    loop = subprocess.Popen([sys.executable, "-c", BUSY_LOOP.format(s=1.5)])
    other = meter.other_busy_cores()
    while loop.poll() is None:
        other = meter.other_busy_cores()
    assert other is not None and other >= 0.6, other
    meter = Meter(CORES)
    subprocess.run([sys.executable, "-c", BUSY_LOOP.format(s=1.5)], check=True)
    own = meter.other_busy_cores()
    assert own is not None and own <= other - 0.5, (own, other)


def _record_load(folder, machine: dict) -> None:
    doc = json.loads((folder / "run.json").read_text())
    doc["machine"] = machine
    (folder / "run.json").write_text(json.dumps(doc))


def test_a_run_on_a_busy_machine_says_so_beside_its_efficiency(tmp_path):
    one = tb.run_folder(tmp_path, "ddp-dp1", steps=[9.0, 1e-4, 1e-4], threads=1)
    two = tb.run_folder(tmp_path, "ddp-dp2", dp=2, steps=[9.0, 2e-4, 2e-4], threads=1)
    _record_load(one, {"cores": 2, "other_busy_cores": 0.04})
    _record_load(two, {"cores": 2, "other_busy_cores": 0.8, "other_busy_cores_before": 0.2})
    rows = {r.dp: r for r in traceview.load_runs([tmp_path]).scaling()}
    assert not any(c.startswith("busy machine") for c in rows[1].caveats)
    assert rows[2].efficiency == pytest.approx(0.5)
    assert (
        "busy machine: other processes kept 0.8 of its 2 cores busy while this run's 2 ranks × "
        "1 thread ran: its step times and E(N) measure that contention (rerun on a quiet "
        "machine)"
    ) in rows[2].caveats
    # The DP-1 run on a busy machine: every E(N) resting on it says so.
    _record_load(one, {"cores": 2, "other_busy_cores": 1.5})
    rows = {r.dp: r for r in traceview.load_runs([tmp_path]).scaling()}
    assert "E(N) rests on a DP-1 run taken on a busy machine" in rows[2].caveats
