"""The default memory bound is the limit of the control group the process is in (a SLURM
step, a systemd unit, a container), not only the machine's or the root group's: in a real
cgroup made for the test, a trace the bound should refuse is refused in one line, not killed
for memory (exit 137, no message)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests import tracebuild as tb

ROOT = Path(__file__).parents[2]
LIMIT = 600 << 20


def _own_memory_group() -> tuple[Path, str] | None:
    """This process's memory cgroup folder and its limit file's name (v2, else v1)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            return Path("/sys/fs/cgroup") / path.lstrip("/"), "memory.max"
        if "memory" in controllers.split(","):
            return Path("/sys/fs/cgroup/memory") / path.lstrip("/"), "memory.limit_in_bytes"
    return None


@pytest.fixture
def cgroup():
    """A child memory cgroup of LIMIT bytes, and how to run a command inside it."""
    own = _own_memory_group()
    if own is None or os.geteuid() != 0:
        pytest.skip("needs root and a memory cgroup controller to make a cgroup")
    parent, limit_file = own
    group = parent / f"traceview-test-{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
        (group / limit_file).write_text(str(LIMIT))
    except OSError as e:
        pytest.skip(f"cannot make a memory cgroup here ({e.strerror})")

    def inside(*args: str) -> subprocess.CompletedProcess[str]:
        # The shell joins the group, then becomes the command: the command runs under it.
        line = f'echo $$ > "{group}/cgroup.procs" && exec "$@"'
        return subprocess.run(["sh", "-c", line, "sh", *args], capture_output=True, text=True,
                              cwd=ROOT, timeout=600)  # fmt: skip

    try:
        yield inside
    finally:
        group.rmdir()


@pytest.mark.cli
def test_the_bound_is_the_process_s_own_cgroup_limit(cgroup):
    done = cgroup(sys.executable, "-c",
                  "from traceview.parse.budget import machine_memory; print(machine_memory())")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == LIMIT


@pytest.mark.slow
@pytest.mark.skipif(
    "libasan" in os.environ.get("LD_PRELOAD", ""),
    reason="under AddressSanitizer (scripts/sanitize.sh) an event takes several times the "
    "bound's bytes: the bound is for the normal build",
)
def test_a_trace_beyond_the_cgroup_s_memory_is_refused_not_killed(cgroup, tmp_path):
    # 3 million tiny events: ~770 MB at the bound's 256 bytes an event, over the group's 600.
    event = json.dumps(tb.cpu_op("a", 1, 1)).encode()
    trace = tmp_path / "many.json.gz"
    with gzip.open(trace, "wb", compresslevel=1) as f:
        f.write(b'{"traceEvents": [' + event)
        for _ in range(300):
            f.write((b", " + event) * 10_000)
        f.write(b"]}")
    done = cgroup(sys.executable, "-m", "traceview", "analyze", str(trace))
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    (line,) = done.stderr.strip().splitlines()
    assert "memory bound of 600 MB" in line and "--max-memory-mb" in line, line
