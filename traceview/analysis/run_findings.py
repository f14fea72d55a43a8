"""Findings about runs rather than one job's timeline: step times too noisy to scale from, and
which ZeRO stage fits a memory budget (docs/findings.md)."""

from __future__ import annotations

from traceview.analysis.finding import Finding
from traceview.analysis.scaling import ScalingRow
from traceview.analysis.theory import model_state_bytes, run_precision
from traceview.parse.run_record import RunRecord
from traceview.strategies import STRATEGIES

GiB = 1 << 30


def noisy_steps(row: ScalingRow) -> Finding | None:
    said = next((c for c in row.caveats if c.startswith("noisy")), None)
    if said is None:
        return None
    return Finding(
        rule="noisy_steps",
        job=row.job,
        what=said.removeprefix("noisy: "),
        action=(
            "its throughput and E(N) are not to be trusted: rerun on a quiet machine "
            "(nothing else on its CPUs and GPUs), with more steps"
        ),
        numbers={
            "min_s": round(row.step_seconds_min or 0, 4),
            "max_s": round(row.step_seconds_max or 0, 4),
        },
    )


def _size(n: float) -> str:
    return f"{n / GiB:,.2f} GiB" if n >= GiB / 10 else f"{n / 2**20:,.1f} MiB"


def memory_fit(record: RunRecord, name: str, budget_bytes: float) -> Finding | None:
    """The least-sharded strategy whose model states (the ZeRO formula, Adam) fit the budget
    per rank for the run's model at its DP degree; or the DP degree ZeRO-3 would need."""
    precision = run_precision(record.config)
    if precision is None:
        return None
    psi, n = record.num_params, record.world_size
    need = {}
    for strategy in STRATEGIES:  # least sharding first
        states = model_state_bytes(strategy, psi, n, precision)
        if states is not None:
            need[strategy] = sum(states.values())
    numbers: dict[str, float | int | str] = {f"{s}_bytes": round(b) for s, b in need.items()}
    numbers |= {"budget_bytes": round(budget_bytes), "params": psi, "dp": n}
    needs = ", ".join(f"{s} {_size(b)}" for s, b in need.items())
    what = f"model states per rank for {psi:,} parameters ({precision}) at DP {n}: {needs}"
    fits = [s for s, b in need.items() if b <= budget_bytes]
    if fits:
        action = f"{fits[0]} is the least sharding that fits {_size(budget_bytes)} per rank"
    else:
        zero3_total = need.get("zero3", 0) * n  # 16Ψ in fp32, shared by the ranks
        action = (
            f"none fits {_size(budget_bytes)} per rank at DP {n}; zero3 fits from DP "
            f"{int(-(-zero3_total // budget_bytes))}"
        )
    return Finding(
        rule="memory_fit", job=name, what=what, action=action + " (before activations)",
        numbers=numbers,
    )  # fmt: skip
