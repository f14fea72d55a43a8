"""The harness and the sweep refuse bad input with one line, before anything runs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from instrumented_train.config import ConfigError
from instrumented_train.distributed import check_devices
from instrumented_train.strategies import unsupported_reason

ROOT = Path(__file__).parents[2]


def run(*args: str, module: str = "instrumented_train") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=120
    )


def one_line(done: subprocess.CompletedProcess[str], prefix: str, fragment: str) -> None:
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(prefix) and fragment in lines[0], lines[0]


@pytest.mark.torchrun
@pytest.mark.parametrize("module", ["instrumented_train", "instrumented_train.sweep"])
def test_force_never_writes_through_an_incoming_link_to_another_run(tmp_path, module):
    # RUN.incoming a link to another run: clearing it out would delete that run's files.
    out, other = tmp_path / "run", tmp_path / "other"
    record = "index.json" if module.endswith("sweep") else "run.json"  # a sweep's, a run's
    for folder in (out, other):
        folder.mkdir()
        (folder / record).write_text('{"runs": []}')
    (tmp_path / "run.incoming").symlink_to(other)
    one_line(
        run("--out", str(out), "--force", module=module),
        "instrumented_train: error: " if module == "instrumented_train" else "sweep: error: ",
        f"{tmp_path / 'run.incoming'} is a link (to {other}); not writing through it",
    )
    assert [p.name for p in other.iterdir()] == [record]


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--strategy", "zero4"], "invalid choice: 'zero4'"),
        (["--micro-batch", "two"], "not an int: 'two'"),
        (["--micro-batch", "0"], "--micro-batch must be at least 1"),
        (
            ["--strategy", "zero3", "--bucket-cap-mb", "5"],
            "--bucket-cap-mb applies to ddp and zero1 only",
        ),
        (["--precision", "bf16", "--device", "cpu"], "bf16 mixed precision needs a GPU"),
        (["--baseline-steps", "1"], "--baseline-steps must be at least 2"),
    ],
)
@pytest.mark.torchrun
def test_bad_flags(args, fragment):
    one_line(run(*args), "instrumented_train: error: ", fragment)


@pytest.mark.torchrun
def test_an_existing_run_folder_is_kept_unless_forced(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text("{}")
    one_line(run("--out", str(out)), "instrumented_train: error: ", "already exists")
    assert (out / "run.json").read_text() == "{}"


@pytest.mark.torchrun
def test_force_never_replaces_a_folder_holding_other_files(tmp_path):
    (tmp_path / "run.json").write_text("{}")
    (tmp_path / "thesis.tex").write_text("precious")
    (tmp_path / "src").mkdir()
    one_line(
        run("--out", str(tmp_path), "--force"),
        "instrumented_train: error: ",
        "holds files the harness did not write (src, thesis.tex); not replacing it",
    )
    assert (tmp_path / "thesis.tex").read_text() == "precious"


@pytest.mark.torchrun
def test_force_never_replaces_the_folder_it_runs_in(tmp_path):
    run_folder = tmp_path / "run"
    run_folder.mkdir()
    (run_folder / "run.json").write_text("{}")
    here = "is the folder this command runs in"
    for out, cwd, fragment in (
        (".", run_folder, here),  # was a traceback: "." has no name to put ".incoming" after
        (str(run_folder), run_folder, here),
        (".", tmp_path, "holds files the harness did not write (run)"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "instrumented_train", "--out", out, "--force"],
            capture_output=True, text=True, timeout=120, cwd=cwd,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        one_line(done, "instrumented_train: error: ", fragment)
    assert (run_folder / "run.json").read_text() == "{}"


@pytest.mark.torchrun
def test_a_sweep_is_never_replaced_from_inside_it(tmp_path):
    (tmp_path / "index.json").write_text('{"runs": []}')
    done = subprocess.run(
        [sys.executable, "-m", "instrumented_train.sweep", "--out", ".", "--force"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    one_line(done, "sweep: error: ", "is the folder this command runs in")
    assert (tmp_path / "index.json").read_text() == '{"runs": []}'


@pytest.mark.torchrun
def test_force_never_writes_through_an_incoming_folder_holding_other_files(tmp_path):
    out, incoming = tmp_path / "run", tmp_path / "run.incoming"
    out.mkdir()
    (out / "run.json").write_text("{}")
    incoming.mkdir()
    (incoming / "notes.txt").write_text("mine")
    one_line(
        run("--out", str(out), "--force"),
        "instrumented_train: error: ",
        f"{incoming} holds files the harness did not write (notes.txt); not writing there",
    )
    assert (incoming / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--lr", "nan"], "--lr must be a finite number, not nan"),
        (["--bucket-cap-mb", "nan"], "--bucket-cap-mb must be a finite number, not nan"),
        (["--seq-len", "99999999999"], "--seq-len must be at most 131,072 (got 99,999,999,999)"),
        (["--seed", "-1"], "--seed must be at least 0"),
    ],
)
@pytest.mark.torchrun
def test_absurd_values_are_refused(args, fragment):
    one_line(run(*args), "instrumented_train: error: ", fragment)


@pytest.mark.torchrun
def test_an_unwritable_out_is_refused_before_any_process_group(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    done = run("--out", str(tmp_path / "file.txt" / "run"))
    one_line(done, "instrumented_train: error: ", f"{tmp_path / 'file.txt'} is not a folder")
    one_line(
        run("--out", "/proc/no/sweep", module="instrumented_train.sweep"),
        "sweep: error: ",
        "--out /proc/no/sweep: cannot write there",
    )


@pytest.mark.torchrun
def test_outside_torchrun_says_how_to_start():
    one_line(run(), "instrumented_train: error: ", "start with torchrun")


@pytest.mark.torchrun
def test_cuda_requested_without_a_gpu(tmp_path):
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=1",
        "-m",
        "instrumented_train",
        "--device",
        "cuda",
        "--out",
        str(tmp_path / "r"),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert (
        "instrumented_train: error: --device cuda, but no CUDA device is available" in done.stderr
    )
    assert not (tmp_path / "r").exists()


def test_more_ranks_than_gpus():
    with pytest.raises(ConfigError, match=r"4 ranks on this node but only 2 GPUs"):
        check_devices("cuda", local_world_size=4, gpus=2)
    with pytest.raises(ConfigError, match="4 ranks on this node"):
        check_devices("auto", local_world_size=4, gpus=2)
    assert check_devices("auto", local_world_size=4, gpus=0) == "cpu"
    assert check_devices("auto", local_world_size=2, gpus=8) == "cuda"


def test_a_strategy_the_installed_torch_cannot_do():
    assert unsupported_reason("zero2", "2.3.1+cu121") == (
        "--strategy zero2 needs torch >= 2.6 (installed: 2.3.1+cu121)"
    )
    assert unsupported_reason("ddp", "2.3.1") is None
    assert unsupported_reason("zero3", "2.13.0+cpu") is None


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--strategies", "ddp,zero9"], "unknown 'zero9'"),
        (["--dp", "2,x"], "not a list of int"),
        (["--dp", "0"], "--dp degrees must be at least 1"),
        (["--", "--strategy", "ddp"], "are sweep options: put them before --"),
        (["--", "--micro-batch", "0"], "--micro-batch must be at least 1"),
        (["--strategies", "zero2", "--", "--bucket-cap-mb", "4"], "are sweep options"),
    ],
)
@pytest.mark.torchrun
def test_sweep_refuses_before_launching(tmp_path, args, fragment):
    out = tmp_path / "sweep"
    one_line(
        run("--out", str(out), *args, module="instrumented_train.sweep"), "sweep: error: ", fragment
    )
    assert not out.exists()


@pytest.mark.torchrun
def test_sweep_keeps_an_existing_sweep_unless_forced(tmp_path):
    (tmp_path / "index.json").write_text(json.dumps({"runs": []}))
    done = run("--out", str(tmp_path), module="instrumented_train.sweep")
    one_line(done, "sweep: error: ", "already exists")


def test_a_run_written_whole_is_ok_whatever_its_teardown(tmp_path):
    from instrumented_train.sweep import point_status

    folder = tmp_path / "ddp-dp2"
    folder.mkdir()
    assert point_status(folder, 2, 0) == {"status": "failed"}  # nothing written
    for name in ("run.json", "rank0.pt.trace.json.gz"):
        (folder / name).write_text("{}")
    assert point_status(folder, 2, 0) == {"status": "failed"}  # rank 1's trace is missing
    (folder / "rank1.pt.trace.json.gz").write_text("{}")
    assert point_status(folder, 2, 0) == {"status": "ok"}
    assert point_status(folder, 2, -6) == {
        "status": "ok",
        "note": "the run was written whole; torchrun exited with -6 in teardown",
    }
