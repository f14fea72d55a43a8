"""A real S3 endpoint on 127.0.0.1 for the tests (moto's standalone server, a process of its
own, stopped by its id after), and a TCP relay in front of it that can hold one request on
its way — a writer's network stalled at a chosen step of its commit."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from contextlib import suppress
from pathlib import Path
from urllib.parse import unquote

import botocore.exceptions
import pytest

from tests.procs import wait_gone

BUCKET = "traces"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """An S3 endpoint on 127.0.0.1 holding the bucket `traces`: (the variables that name it,
    a boto3 client, the server's request log)."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("s3") / "server.log"
    log = log_path.open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    try:
        client = client_of(env)
        deadline = time.monotonic() + 60
        while True:
            try:
                client.create_bucket(Bucket=BUCKET)
                break
            except botocore.exceptions.EndpointConnectionError:
                assert time.monotonic() < deadline, "the S3 server did not start"
                time.sleep(0.2)
        yield env, client, log_path
    finally:
        server.terminate()
        assert not wait_gone([server.pid], 20)
        server.wait()
        log.close()


def client_of(env: dict[str, str]):
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name=env["AWS_DEFAULT_REGION"],
    )


def upload(client, folder: Path, prefix: str) -> str:
    """Every file below `folder` into the bucket under `prefix`; its URL."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        client.upload_file(str(path), BUCKET, f"{prefix}/{path.relative_to(folder)}")
    return f"s3://{BUCKET}/{prefix}"


def keys(client, prefix: str) -> list[str]:
    found = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return sorted(o["Key"].removeprefix(prefix) for o in found)


class Relay:
    """127.0.0.1:`port` relayed to the endpoint; the first request whose line starts with
    `hold` (e.g. "PUT /traces/store/job=a/job.json") is held — not sent on — until
    `release()` (sent then) or `drop()` (its connection closed). `held` is set when it is."""

    def __init__(self, endpoint: str, hold: str) -> None:
        host, port = endpoint.removeprefix("http://").split(":")
        self.upstream = (host, int(port))
        self.hold = hold
        self.held = threading.Event()
        self._go = threading.Event()
        self._dropped = False
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._sockets: list[socket.socket] = [self._server]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.port}"}

    def release(self) -> None:
        self._go.set()

    def drop(self) -> None:
        self._dropped = True
        self._go.set()

    def close(self) -> None:
        self.drop()
        for s in self._sockets:
            s.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.upstream)
            self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _holds(self, data: bytes) -> bool:
        line = unquote(data.split(b"\r\n", 1)[0].decode("latin-1"))  # keys are %-quoted
        return line.startswith(self.hold)

    def _pump(self, source: socket.socket, sink: socket.socket, requests: bool) -> None:
        try:
            while data := source.recv(1 << 16):
                if requests and not self.held.is_set() and self._holds(data):
                    self.held.set()
                    self._go.wait()
                    if self._dropped:
                        break
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            with suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
