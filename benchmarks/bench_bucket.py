"""A store in an S3 bucket against the same store on disk: `ingest` of a job (first, again with
nothing changed, again with one rank changed) and `analyze` of the stored job, side by side.

The bucket is moto's S3 server on 127.0.0.1 (a process of its own, started and stopped here):
what it measures is traceview's own work and the objects it moves, not a network's. The job is
N one-step ranks of the real NCCL excerpt (benchmarks/bench_store.py synthesize, kept in
bench_out/bucket). Each command runs as its own process, each pair in turn `--repeat` times;
the median is shown. Run from the repository root:

    .venv/bin/python benchmarks/bench_bucket.py                  # 256 ranks
    .venv/bin/python benchmarks/bench_bucket.py --ranks 32       # a quicker look
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_analyze import Run, measure_once
from bench_store import synthesize, tv

ROOT = Path(__file__).parents[1]
BUCKET = "bench"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def endpoint() -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    """moto's S3 server on a free port, with the bucket made; the variables that name it."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", **CREDENTIALS}
    import boto3
    import botocore.exceptions

    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], **_boto_keys())
    deadline = time.monotonic() + 60
    while True:
        try:
            client.create_bucket(Bucket=BUCKET)
            return server, env
        except botocore.exceptions.EndpointConnectionError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise SystemExit("the S3 server did not start") from None
            time.sleep(0.2)


def synced(store: Path, env: dict[str, str], prefix: str) -> str:
    """`store` copied into the bucket as it is, file for file (as `aws s3 sync` copies one;
    docs/store.md, "A store in a bucket"): its URL."""
    import boto3

    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], **_boto_keys())
    for path in store.rglob("*"):
        if path.is_file() and not path.name.startswith("."):  # not the writer's lock
            key = f"{prefix}/{path.relative_to(store).as_posix()}"
            client.upload_file(str(path), BUCKET, key)
    return f"s3://{BUCKET}/{prefix}"


def _boto_keys() -> dict[str, str]:
    return {
        "aws_access_key_id": CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        "region_name": CREDENTIALS["AWS_DEFAULT_REGION"],
    }


def _touch_one_rank(job: Path, turn: int) -> None:
    """Rank 0's trace changed (a metadata key added): one rank to ingest again."""
    path = job / "rank0.json"
    text = path.read_text()
    head, rest = text.split("{", 1)
    path.write_text(f'{head}{{"bench_turn": {turn}, {rest}')


def _ingest(job: Path, store: str, env: dict[str, str]) -> Run:
    return measure_once(tv("ingest", job, "--store", store), env)


def _figures(runs: list[Run]) -> dict[str, float]:
    return {
        "wall_s": statistics.median(r.wall_s for r in runs),
        "cpu_s": statistics.median(r.cpu_s for r in runs),
        "peak_rss_mb": max(r.peak_rss_mb for r in runs),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, help="also write the figures here, as JSON")
    args = parser.parse_args()
    work = ROOT / "bench_out" / "bucket"
    source = synthesize(work / f"traces-{args.ranks}", args.ranks, 0, one_step=True)
    job = work / "job"  # a copy: one rank of it is changed
    shutil.rmtree(job, ignore_errors=True)
    shutil.copytree(source, job)
    server, env = endpoint()
    runs: dict[str, dict[str, list[Run]]] = {}
    try:
        for turn in range(args.repeat):
            disk = work / "store"
            shutil.rmtree(disk, ignore_errors=True)
            bucket = f"s3://{BUCKET}/store-{turn}"
            for where, store in (("disk", str(disk)), ("bucket", bucket)):
                side = runs.setdefault(where, {})
                side.setdefault("first ingest", []).append(_ingest(job, store, env))
                side.setdefault("ingest, nothing changed", []).append(_ingest(job, store, env))
            _touch_one_rank(job, turn)
            for where, store in (("disk", str(disk)), ("bucket", bucket)):
                side = runs[where]
                side.setdefault("ingest, one rank changed", []).append(_ingest(job, store, env))
                analyze = measure_once(tv("analyze", store, "--format", "json"), env)
                side.setdefault("analyze", []).append(analyze)
            print(f"\rturn {turn + 1} of {args.repeat}", end="", file=sys.stderr)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(file=sys.stderr)
    figures = {
        where: {what: _figures(r) for what, r in side.items()} for where, side in runs.items()
    }
    print(f"{args.ranks:,} one-step ranks, median of {args.repeat} (moto S3 on 127.0.0.1)")
    print(f"  {'':<26} {'disk s':>8} {'bucket s':>9} {'bucket ÷ disk':>14}")
    for what in figures["disk"]:
        a, b = figures["disk"][what]["wall_s"], figures["bucket"][what]["wall_s"]
        print(f"  {what:<26} {a:>8.2f} {b:>9.2f} {b / a:>14.2f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        document = {"ranks": args.ranks, "repeat": args.repeat, "figures": figures}
        args.out.write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    os.environ.pop("AWS_PROFILE", None)  # the endpoint's keys, not a profile's
    sys.exit(main())
