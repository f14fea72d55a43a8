"""Several hosts on this machine: a network namespace each, joined by a bridge, each with its
own address, host name (a UTS namespace), /etc/hosts naming them all, and a local disk of its
own (a folder bound over the same path in its mount namespace), as the nodes of a cluster have.
Needs root, `ip` and `unshare`; `hosts_or_skip` says why not where they are missing."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import procs

SUBNET = "10.213.7"  # on links of their own: no route of this machine's is touched


@dataclass(frozen=True)
class Host:
    name: str  # its host name, as `hostname` and /etc/hosts say it
    namespace: str
    address: str
    disk: Path  # what its processes see at the shared mount point


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "several hosts need root (network, UTS and mount namespaces)"
    missing = [tool for tool in ("ip", "unshare") if shutil.which(tool) is None]
    return f"several hosts need {' and '.join(missing)}" if missing else None


@contextmanager
def hosts_or_skip(root: Path, count: int, mount_point: Path) -> Iterator[list[Host]]:
    """`count` hosts; each binds its own folder under `root` over `mount_point`."""
    why = _why_not()
    if why:
        pytest.skip(why)
    tag = f"tv{os.getpid() % 100000}"
    bridge = f"{tag}br"
    made: list[str] = []
    try:
        if (done := _ip("link", "add", bridge, "type", "bridge")).returncode:
            pytest.skip(f"no bridge can be made here: {done.stderr.strip()}")
        _ip("link", "set", bridge, "up")
        hosts = []
        for i in range(count):
            ns = f"{tag}h{i}"
            if (done := _ip("netns", "add", ns)).returncode:
                pytest.skip(f"no network namespace can be made here: {done.stderr.strip()}")
            made.append(ns)
            outside = f"{tag}v{i}"
            for step in (
                ("link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", ns),
                ("link", "set", outside, "master", bridge),
                ("link", "set", outside, "up"),
                ("-n", ns, "addr", "add", f"{SUBNET}.{i + 1}/24", "dev", "eth0"),
                ("-n", ns, "link", "set", "eth0", "up"),
                ("-n", ns, "link", "set", "lo", "up"),
            ):
                if (done := _ip(*step)).returncode:
                    raise RuntimeError(f"ip {' '.join(step)}: {done.stderr.strip()}")
            disk = root / f"host{i}"
            disk.mkdir(parents=True)
            hosts.append(Host(f"host{i}", ns, f"{SUBNET}.{i + 1}", disk))
        names = "".join(f"{h.address} {h.name}\n" for h in hosts)
        (root / "hosts").write_text(f"127.0.0.1 localhost\n{names}")
        mount_point.mkdir(parents=True, exist_ok=True)
        yield hosts
    finally:
        for ns in made:
            _ip("netns", "delete", ns)
        _ip("link", "delete", bridge)


def start(host: Host, root: Path, mount_point: Path, command: list[str], log: Path,
          env: dict[str, str]) -> subprocess.Popen[bytes]:  # fmt: skip
    """`command` on `host`: in its namespaces, under its name, with its disk at mount_point."""
    script = "; ".join([
        f"hostname {host.name}",
        f"mount --bind {shlex.quote(str(root / 'hosts'))} /etc/hosts",
        f"mount --bind {shlex.quote(str(host.disk))} {shlex.quote(str(mount_point))}",
        " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " exec "
        + shlex.join(command),
    ])  # fmt: skip
    return subprocess.Popen(
        ["ip", "netns", "exec", host.namespace, "unshare", "--uts", "--mount", "sh", "-c",
         script],
        stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip


def stop(processes: list[subprocess.Popen[bytes]], grace: float = 0) -> list[int]:
    """Each process's whole group, by its id (after SIGTERM and `grace` seconds, where given:
    a daemon such as `ray start --block` stops what it started); what a test started, it ends.
    Returns the processes below them still alive after (none, unless something escaped)."""
    below = [pid for p in processes for pid in procs.descendants(p.pid)]
    if grace:
        for p in processes:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in processes:
            with suppress(subprocess.TimeoutExpired):
                p.wait(timeout=grace)
    for p in processes:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    for pid in procs.wait_gone(below, timeout=grace or 5):
        os.kill(pid, signal.SIGKILL)
    return procs.wait_gone(below, timeout=5)
