"""A user's DDP job whose last bucket is one large embedding gradient (tests/integration/
embedding_job.py, real torchrun processes and profiler traces): the tail is said to be that one
tensor, and no lower bucket_cap_mb is advised — at cap 1 MiB, nor after lowering it to 0.5."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.run_cli import traceview

pytest.importorskip("torch")
JOB = Path(__file__).with_name("embedding_job.py")
EMBEDDING_MIB = 64.0  # 16,384 × 1,024 floats


def run_job(out: Path, cap_mb: str) -> Path:
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc_per_node=2", str(JOB), str(out), cap_mb]  # fmt: skip
    proc = subprocess.run(torchrun, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.torchrun
@pytest.mark.parametrize("cap_mb", ["1", "0.5"])
def test_a_tail_of_one_embedding_gradient_is_not_told_to_lower_the_cap(tmp_path, cap_mb):
    folder = run_job(tmp_path / "job", cap_mb)
    result = traceview("analyze", folder, "--format", "json")
    assert result.code == 0, result.err
    findings = json.loads(result.out)["findings"]
    assert not [f for f in findings if "lower bucket_cap_mb" in f["action"]]
    found = {f["rule"]: f for f in findings}
    if "backward_tail" not in found:
        # On a busy machine one rank may lag: waiting is then most of the all-reduces' time,
        # bucket advice is withheld, and the late rank's finding says so.
        late = [f for f in findings if f["rule"] in ("straggler", "rotating_stragglers", "waiting")]
        assert late and "withheld" in late[0]["action"], findings
        return
    tail = found["backward_tail"]
    # DDP reduces the embedding's gradient, ready last, in a bucket of its own or nearly.
    assert tail["numbers"]["last_gradient_mib"] == EMBEDDING_MIB
    assert tail["numbers"]["last_gradient_share_pct"] >= 95
    assert "DDP never splits a tensor" in tail["what"]
    assert "lower bucket_cap_mb" not in tail["action"]
    assert "bf16_compress_hook" in tail["action"]  # fp32 messages
