"""Run a grid of strategies × DP degrees, one torchrun per point, and index the runs.

    python -m instrumented_train.sweep --strategies ddp,zero1,zero2,zero3 --dp 1,2,4 \\
        --out sweeps/cpu -- --preset tiny --active 2

Flags after `--` go to every run (see `python -m instrumented_train --help`). Each run's
folder holds its traces and run.json; `index.json` lists every point with its status, and is
rewritten after each point, so an interrupted sweep leaves a valid one. With --force, the new
sweep is written beside the old one (`<out>.incoming`) and replaces it only once it is done:
an interrupted or failed --force sweep leaves the old one as it was.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import torch

from instrumented_train import folders
from instrumented_train.config import ConfigError
from instrumented_train.distributed import check_devices, cpus
from instrumented_train.flags import parse_config
from instrumented_train.load import Meter, other_busy_cores_now
from instrumented_train.record import write_json_atomically
from instrumented_train.strategies import unsupported_reason
from traceview.parse.run_record import MachineLoad
from traceview.plain import counted
from traceview.strategies import STRATEGIES

INDEX = "index.json"
LOGS = "logs"
OWNED_FLAGS = ("--strategy", "--out", "--force", "--device", "--bucket-cap-mb")  # set per run


def _list(kind: type, choices: tuple[str, ...] = ()) -> Callable[[str], list[Any]]:
    def parse(text: str) -> list[Any]:
        items = [x.strip() for x in text.split(",") if x.strip()]
        if not items:
            raise argparse.ArgumentTypeError("empty list")
        try:
            values = [kind(x) for x in items]
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a list of {kind.__name__}: {text!r}") from None
        bad = [v for v in values if choices and v not in choices]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown {bad[0]!r} (choose from {', '.join(choices)})"
            )
        return values

    return parse


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise ConfigError(f"{message} (see --help)")


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    argv = list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    own, passed = argv[:split], argv[split + 1 :]
    p = _Parser(
        prog="python -m instrumented_train.sweep",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--strategies", type=_list(str, tuple(STRATEGIES)), default=list(STRATEGIES))
    p.add_argument("--dp", type=_list(int), default=[1, 2, 4], help="data-parallel degrees")
    p.add_argument("--out", type=Path, required=True, help="sweep folder to create")
    p.add_argument("--force", action="store_true", help="replace an existing sweep folder")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--bucket-cap-mb", type=float, help="DDP bucket size for the ddp and zero1 runs")
    p.set_defaults(load_before=None)  # measured as the sweep starts (main)
    args = p.parse_args(own)
    args.out = folders.place_of(args.out)
    if any(n < 1 for n in args.dp):
        raise ConfigError("--dp degrees must be at least 1")
    if any(f.split("=")[0] in OWNED_FLAGS for f in passed):
        raise ConfigError(f"{', '.join(OWNED_FLAGS)} are sweep options: put them before --")
    return args, passed


def validate(args: argparse.Namespace, passed: list[str]) -> None:
    """Everything a run would refuse, refused once here, before anything is launched."""
    gpus = torch.cuda.device_count()
    for strategy in args.strategies:
        parse_config(run_flags(args, strategy, passed))
        if reason := unsupported_reason(strategy, torch.__version__):
            raise ConfigError(reason)
    for n in args.dp:
        check_devices(args.device, n, gpus)
    if args.out.exists() and any(args.out.iterdir()):
        if not args.force:
            raise ConfigError(
                f"--out {args.out} already exists; choose another folder or pass --force"
            )
        if not (args.out / "index.json").exists():
            raise ConfigError(
                f"--out {args.out} is not a sweep folder (no index.json); not replacing it"
            )
        folders.refuse_the_folder_run_in(args.out)
        incoming = args.out.with_name(args.out.name + folders.INCOMING)
        folders.refuse_a_link(incoming)
        for folder in (args.out, incoming):
            if folder.is_dir() and (foreign := _foreign(folder)):
                raise ConfigError(
                    f"{folder} holds files the sweep did not write ({', '.join(foreign[:3])}); "
                    "not replacing it"
                )
    folders.check_writable(args.out)


def oversubscribed(
    args: argparse.Namespace, passed: list[str], load: float | None = None
) -> str | None:
    """On CPU: the warning that the largest point's ranks × threads, with the other processes'
    `load` (cores they keep busy), exceed this machine's cores (its ranks then compete for
    cores, and its step times measure that)."""
    if check_devices(args.device, 1, torch.cuda.device_count()) != "cpu":
        return None
    threads = parse_config(run_flags(args, args.strategies[0], passed)).threads or 1
    dp, cores = max(args.dp), len(cpus())
    busy = MachineLoad(cores, load).contended(dp, threads)
    if dp * threads <= cores and not busy:
        return None
    others = f" and other processes keep {load:.1f} of them busy" if busy else ""
    return (
        f"DP {dp} × {counted(threads, 'intra-op thread')} per rank exceed the "
        f"{counted(cores, 'core')} this machine lets the sweep use{others}: those ranks "
        "compete for cores, and their step times and E(N) measure that"
    )


def machine_said(load: float | None) -> str:
    """The line a sweep starts with: the cores it may use and how busy other processes keep
    them (the demo's figures depend on it)."""
    cores = counted(len(cpus()), "core")
    if load is None:
        return f"sweep: {cores}; how busy other processes keep them is not known here"
    return f"sweep: {cores}; other processes keep {load:.1f} of them busy (over 1 s)"


def _foreign(out: Path) -> list[str]:
    """What a sweep folder holds besides its index, logs and run folders (harness files only)."""
    try:
        runs = {r["path"] for r in json.loads((out / INDEX).read_text())["runs"]}
    except (OSError, ValueError, KeyError, TypeError):
        runs = set()
    foreign = []
    for p in sorted(out.iterdir()):
        if p.name == INDEX:
            continue
        if p.name == LOGS and p.is_dir():
            foreign += [f"{LOGS}/{q.name}" for q in p.iterdir() if not q.name.endswith(".log")]
        elif p.name in runs and p.is_dir():
            foreign += [f"{p.name}/{f}" for f in folders.foreign_files(p)]
        else:
            foreign.append(p.name)
    return foreign


def run_flags(args: argparse.Namespace, strategy: str, passed: list[str]) -> list[str]:
    flags = ["--strategy", strategy, "--device", args.device, *passed]
    if args.bucket_cap_mb is not None and STRATEGIES[strategy].ddp_buckets:
        flags += ["--bucket-cap-mb", str(args.bucket_cap_mb)]
    return flags


def run_point(
    args: argparse.Namespace, strategy: str, dp: int, passed: list[str], into: Path
) -> dict[str, Any]:
    folder = into / f"{strategy}-dp{dp}"
    log_path = into / LOGS / f"{folder.name}.log"
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={dp}",
        "-m",
        "instrumented_train",
        "--out",
        str(folder),
        *run_flags(args, strategy, passed),
    ]
    start = time.monotonic()
    entry: dict[str, Any] = {
        "strategy": strategy,
        "dp": dp,
        "path": folder.name,
        "status": "interrupted",
        "exit_code": None,
        "seconds": None,
        "log": str(log_path.relative_to(into)),
    }
    meter = Meter(cpus())
    try:
        with log_path.open("w") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
            code = proc.wait()
    except KeyboardInterrupt:
        proc.wait()  # torchrun got the Ctrl-C too, and stops its ranks
        entry["seconds"] = round(time.monotonic() - start, 2)
        raise Interrupted(entry) from None
    entry.update(exit_code=code, seconds=round(time.monotonic() - start, 2))
    entry.update(point_status(folder, dp, code))
    machine = MachineLoad(len(cpus()), meter.other_busy_cores(), args.load_before)
    entry["other_busy_cores"] = machine.other_busy_cores
    if entry["status"] == "ok":
        _record_load(folder / "run.json", machine)
    return entry


def _record_load(run_json: Path, machine: MachineLoad) -> None:
    """The load measured around the run, into its run record (read by traceview compare)."""
    doc = json.loads(run_json.read_text())
    doc["machine"] = msgspec.to_builtins(machine)
    write_json_atomically(run_json, doc)


def point_status(folder: Path, dp: int, exit_code: int) -> dict[str, str]:
    """A run whose record and every trace are written succeeded, whatever its teardown did."""
    complete = (folder / "run.json").exists() and all(
        (folder / f"rank{r}.pt.trace.json.gz").exists() for r in range(dp)
    )
    if not complete:
        return {"status": "failed"}
    if exit_code != 0:
        return {
            "status": "ok",
            "note": f"the run was written whole; torchrun exited with {exit_code} in teardown",
        }
    return {"status": "ok"}


class Interrupted(Exception):
    """Ctrl-C during a point: the point's index entry, marked interrupted."""

    def __init__(self, entry: dict[str, Any]) -> None:
        super().__init__("interrupted")
        self.entry = entry


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args, passed = parse_args(sys.argv[1:] if argv is None else argv)
        validate(args, passed)
    except ConfigError as e:
        print(f"sweep: error: {e}", file=sys.stderr)
        return 2
    if check_devices(args.device, 1, torch.cuda.device_count()) == "cpu":  # ranks share cores
        args.load_before = other_busy_cores_now(cpus())
        print(machine_said(args.load_before), flush=True)
    if warning := oversubscribed(args, passed, args.load_before):
        print(f"sweep: warning: {warning}", file=sys.stderr)
    # A new sweep goes straight into --out; one replacing a sweep goes beside it until done.
    replacing = args.out.exists() and any(args.out.iterdir())
    into = args.out.with_name(args.out.name + folders.INCOMING) if replacing else args.out
    if into.exists():
        shutil.rmtree(into)  # an earlier attempt at replacing, which never replaced anything
    (into / LOGS).mkdir(parents=True)
    points = [(s, n) for s in args.strategies for n in args.dp]
    command = ["python", "-m", "instrumented_train.sweep", *(argv or sys.argv[1:])]
    index: dict[str, Any] = {"command": command, "runs": []}
    for i, (strategy, dp) in enumerate(points, start=1):
        print(f"[{i}/{len(points)}] {strategy} dp={dp} ...", end=" ", flush=True)
        try:
            entry = run_point(args, strategy, dp, passed, into)
        except Interrupted as stop:
            index["runs"].append(stop.entry)
            write_json_atomically(into / INDEX, index)
            kept = f"; the sweep in {args.out} is as it was" if replacing else ""
            print(
                f"\nsweep: interrupted: {i - 1} of {len(points)} runs done, in {into}{kept}",
                file=sys.stderr,
            )
            return 130
        index["runs"].append(entry)
        write_json_atomically(into / INDEX, index)  # progress survives an interrupt
        busy = entry["other_busy_cores"]
        said = f", other processes {busy:.1f} cores busy" if busy is not None else ""
        print(f"{entry['status']} in {entry['seconds']:.1f} s{said}", flush=True)
    failed = [r for r in index["runs"] if r["status"] != "ok"]
    for r in failed:
        print(
            f"sweep: error: {r['strategy']} dp={r['dp']} failed (exit {r['exit_code']}); "
            f"see {into / r['log']}",
            file=sys.stderr,
        )
    if replacing:
        _swap(into, args.out)
    print(f"{len(points) - len(failed)} of {len(points)} runs written to {args.out}")
    return 1 if failed else 0


def _swap(new: Path, out: Path) -> None:
    """The finished sweep takes the old one's place; the old one's files go (only its own:
    validate() refused a folder holding anything else)."""
    old = out.with_name(f".{out.name}.replaced")
    if old.exists():
        shutil.rmtree(old)
    os.rename(out, old)
    os.rename(new, out)
    if _foreign(old):  # something arrived meanwhile that is not the sweep's: left in place
        print(f"sweep: note: the previous sweep is kept in {old}", file=sys.stderr)
    else:
        shutil.rmtree(old)


if __name__ == "__main__":
    sys.exit(main())
