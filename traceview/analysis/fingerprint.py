"""Which runs are of one model, so that E(N), predictions and comparisons set like against like:
a run's fingerprint — its parameters (Ψ: the run record's count, else the gradients one backward
pass makes ready, from the traces' shapes), how many gradients that is, the device kind, and the
batch and sequence the run record gives. Two runs are of one model where every part both know
agrees (docs/metrics.md "Like with like")."""

from __future__ import annotations

from collections import Counter
from typing import Literal

import msgspec

from traceview.analysis.job import JobReport

ParamsFrom = Literal["run record", "traces"]


class Fingerprint(msgspec.Struct, frozen=True, kw_only=True):
    params: int | None  # Ψ
    params_from: ParamsFrom | None
    gradients: int | None  # parameter tensors with a gradient (one backward pass's)
    mode: str  # "gpu" or "cpu"
    micro_batch: int | None
    seq_len: int | None

    def same_model(self, other: Fingerprint) -> bool:
        """Every part both runs know agrees (and at least the device kind)."""
        pairs = [
            (self.params, other.params),
            (self.gradients, other.gradients),
            (self.micro_batch, other.micro_batch),
            (self.seq_len, other.seq_len),
        ]
        known = all(a == b for a, b in pairs if a is not None and b is not None)
        return known and self.mode == other.mode

    @property
    def said(self) -> str:
        """The model in words: "2,898,688 parameters (from the traces)"."""
        if self.params is None:
            return f"{self.gradients} parameter tensors" if self.gradients else "an unknown model"
        source = "from the traces" if self.params_from == "traces" else "run record"
        return f"{self.params:,} parameters ({source})"

    @property
    def key(self) -> tuple[object, ...]:
        """Runs with a run record and one key are of one model: Ψ is known for each, and the
        gradients' count, which only traces with shapes give, is left out."""
        return (self.params, self.mode, self.micro_batch, self.seq_len)


def traced_params(job: JobReport) -> tuple[int | None, int | None]:
    """(Ψ, parameter tensors) from the traces: the elements and count of the gradients one
    backward pass makes ready, as most rank-steps with recorded shapes say (at least half of
    them: else None). Independent of the gradient collectives, so a figure divided by it is
    not circular."""
    seen = Counter(
        (g.elements, g.gradients) for r in job.ranks for g in r.gradients if g.elements is not None
    )
    if not seen:
        counts = Counter(g.gradients for r in job.ranks for g in r.gradients)
        return None, (counts.most_common(1)[0][0] if counts else None)
    (elements, tensors), n = seen.most_common(1)[0]
    if 2 * n < sum(seen.values()):
        return None, tensors
    return elements, tensors


def fingerprint(job: JobReport) -> Fingerprint:
    elements, tensors = traced_params(job)
    run = job.run
    params, source = (run.num_params, "run record") if run is not None else (elements, "traces")
    return Fingerprint(
        params=params,
        params_from=source if params is not None else None,  # type: ignore[arg-type]
        gradients=tensors,
        mode="gpu" if any(r.mode == "gpu" for r in job.ranks) else "cpu",
        micro_batch=run.config.micro_batch if run is not None else None,
        seq_len=run.config.seq_len if run is not None else None,
    )


RunKey = tuple[str, tuple[object, ...]]  # strategy, model


def run_key(job: JobReport) -> RunKey | None:
    """A run's strategy and model, by which predictions and findings across DP degrees set
    like against like; None without a run record (no degree to set it at)."""
    return None if job.run is None else (job.run.strategy, fingerprint(job).key)
