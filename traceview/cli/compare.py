"""`traceview compare RUN... | SWEEP`: efficiency against DP degree, per strategy."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

import polars as pl

from traceview import __version__
from traceview.analysis.scaling import ScalingRow, scaling_rows
from traceview.cli import inputs
from traceview.cli.render import SCHEMA_VERSION
from traceview.cli.text import aligned
from traceview.errors import TraceviewError
from traceview.parse.run_record import RUN_RECORD

SWEEP_INDEX = "index.json"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare",
        help="across runs: throughput, efficiency vs DP degree, exposed comm, volume, memory",
        description="Compare runs (folders with run.json and rank traces, a sweep folder with "
        "index.json, or folders of foreign rank traces): per strategy and DP degree, "
        "throughput, weak-scaling efficiency E(N), exposed-communication fraction, "
        "communication volume per step and model-state memory, beside the ZeRO theory.",
    )
    inputs.add_options(p, what="run folder, sweep folder, or folder of rank traces")
    p.set_defaults(run=run)


def expand(paths: list[str]) -> list[str]:
    """A sweep folder stands for its successful runs; a folder of run folders for them."""
    out: list[str] = []
    for raw in paths:
        path = Path(raw)
        index = path / SWEEP_INDEX
        if index.is_file():
            try:
                runs = json.loads(index.read_text())["runs"]
                listed = [path / r["path"] for r in runs if r.get("status") == "ok"]
            except (ValueError, KeyError, TypeError, RecursionError) as e:
                raise TraceviewError(f"{index}: not a sweep index ({e})") from None
            for run in listed:  # a sweep's runs are its own subfolders, nothing elsewhere
                if not run.resolve().is_relative_to(path.resolve()):
                    raise TraceviewError(f"{index}: lists a run outside its folder: {run}")
            out += [str(run) for run in listed]
        elif path.is_dir() and not (path / RUN_RECORD).exists():
            children = sorted(p for p in path.iterdir() if (p / RUN_RECORD).is_file())
            out += [str(p) for p in children] or [raw]
        else:
            out.append(raw)
    if not out:
        raise TraceviewError(f"{', '.join(paths)}: no runs to compare")
    return out


COLUMNS = [
    "strategy",
    "dp",
    "step_seconds",
    "step_seconds_min",
    "step_seconds_max",
    "steps_measured",
    "step_source",
    "samples_per_s",
    "tokens_per_s",
    "efficiency",
    "exposed_comm_fraction",
    "comm_volume_psi",
    "comm_volume_theory_psi",
    "precision",
    "model_state_bytes",
    "model_state_theory_bytes",
    "model_state_layout_bytes",
    "caveats",
    "job",
]


def run(args: argparse.Namespace) -> int:
    args.paths = expand(args.paths)
    loaded = inputs.load(args)
    rows = scaling_rows(loaded.jobs)
    if args.format == "json":
        doc = {
            "traceview_version": __version__,
            "schema_version": SCHEMA_VERSION,
            "runs": [asdict(r) for r in rows],
        }
        text = json.dumps(doc, indent=2) + "\n"
    elif args.format == "csv":
        records = [{**asdict(r), "caveats": "; ".join(r.caveats)} for r in rows]
        text = pl.DataFrame(records).select(COLUMNS).write_csv()
    else:
        text = table(rows)
    return inputs.finish(text, args, loaded)


def _fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _mb(value: float | None) -> str:
    return _fmt(None if value is None else value / 1e6, ",.1f")


def table(rows: list[ScalingRow]) -> str:
    head = [
        "strategy",
        "DP",
        "step s (min–max)",
        "samples/s",
        "tokens/s",
        "E(N)",
        "exposed comm",
        "volume Ψ (theory)",
        "model states MB (theory)",
        "!",
        "run",
    ]
    cells = [head]
    for r in rows:
        volume = f"{_fmt(r.comm_volume_psi, '.2f')} ({_fmt(r.comm_volume_theory_psi, '.0f')})"
        theory = _mb(r.model_state_theory_bytes)
        if r.model_state_layout_bytes is not None:
            theory += f"; as run {_mb(r.model_state_layout_bytes)}"
        spread = (
            f"{_fmt(r.step_seconds, '.3f')} ({r.step_seconds_min:.3f}–{r.step_seconds_max:.3f})"
            if r.step_seconds_min is not None and r.step_seconds_max is not None
            else _fmt(r.step_seconds, ".3f")
        )
        cells.append(
            [
                r.strategy,
                _fmt(r.dp, "d"),
                spread,
                _fmt(r.samples_per_s, ",.1f"),
                _fmt(r.tokens_per_s, ",.0f"),
                _fmt(r.efficiency, ".2f"),
                _fmt(r.exposed_comm_fraction, ".1%"),
                volume,
                f"{_mb(r.model_state_bytes)} ({theory})",
                "!" if r.caveats else "",
                Path(r.job).name,
            ]
        )
    lines = aligned(cells, indent="", left_last=True)
    caveats = [f"! {Path(r.job).name}: {c}" for r in rows for c in r.caveats]
    notes = [
        "step s: the median of the run's measured steps (unprofiled ones from run.json, else "
        "profiled; traces alone: each step's slowest rank). E(N) = throughput(N) / "
        "(N × throughput(1)) against the same strategy's DP-1 run (T(1)/T(N) for traces "
        "without a run record); volume in Ψ fp32 elements per rank and step (0 in theory at "
        "DP 1); model states: the largest rank; theory = the textbook ZeRO formula for the "
        "run's precision (AdamW; bf16 = mixed precision), and 'as run' the layout the harness "
        'holds where it differs, which the measurement should match (README "Memory").'
    ]
    return "\n".join([*lines, "", *caveats, *([""] if caveats else []), *notes]) + "\n"
