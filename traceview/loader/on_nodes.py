"""Traces on the disks of a Ray cluster's nodes, not (only) of the machine ingesting them: each
node that holds a path ingests it there, with its own cores, into the store every node sees — so
a job whose ranks wrote on several hosts' local disks (the same path on each) becomes one job in
the store, each node adding the ranks it holds (docs/store.md "Traces on each node's disk").
Nodes that see the same files at a path (a shared file system) ingest them once."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from traceview.errors import TraceviewError
from traceview.loader.engines import ray_session, why_failed
from traceview.loader.peek import peek
from traceview.loader.sources import find_runs
from traceview.parse.run_record import read_run_record
from traceview.plain import counted

if TYPE_CHECKING:
    from traceview.loader.ingest import Ingested


class NodeIngest(msgspec.Struct, frozen=True):
    """What one node did: its ingest's result, or why it failed (said per node): its ingest
    refused the paths (bad input), or its task died (`crashed`: input lost)."""

    node: str  # its address
    paths: tuple[str, ...]
    result: Ingested | None
    failed: str | None
    crashed: bool = False


Listing = tuple[tuple[str, int, int], ...]  # (file under the path, size, mtime in ns)


def _held(paths: Sequence[str]) -> dict[str, Listing]:
    """(On a node.) Those of the paths this node has, each with what it holds there: nodes
    that list the same files see one file system."""
    held: dict[str, Listing] = {}
    for path in paths:
        if not os.path.exists(path):
            continue
        files = [path] if os.path.isfile(path) else [
            os.path.join(d, f) for d, _, names in os.walk(path) for f in names
        ]  # fmt: skip
        listing = []
        for f in sorted(files):
            try:
                st = os.stat(f)
            except OSError:
                continue
            listing.append((os.path.relpath(f, path), st.st_size, st.st_mtime_ns))
        held[path] = tuple(listing)
    return held


def lacks_ranks(path: Path) -> bool:
    """Whether a run at `path` names ranks it holds no trace of (its run record, or its first
    trace's world size against its count of traces): on a cluster whose ranks each wrote on
    their own node's disk, the others are at the same path there."""
    try:
        sources = find_runs([path])
    except TraceviewError:
        return False  # said when it is ingested
    for source in sources:
        if source.folder is None or source.stored or not source.files:
            continue
        try:
            run = read_run_record(source.folder)
        except TraceviewError:
            run = None
        if run is not None and len(run.ranks) > len(source.files):
            return True
        head = peek(source.files[0])
        if head is not None and head.world_size > len(source.files):
            return True
    return False


def _assigned(paths: Sequence[str], held: list[dict[str, Listing]]) -> list[list[str]]:
    """Per node, the paths it ingests: each path on every node that holds it, but once for
    nodes that list the same files there (one file system they share)."""
    out: list[list[str]] = [[] for _ in held]
    for path in paths:
        seen: set[Listing] = set()
        for mine, node in zip(out, held, strict=True):
            if path in node and node[path] not in seen:
                seen.add(node[path])
                mine.append(path)
    return out


def _ingest_here(paths: Sequence[str], store: str, options: dict[str, object]) -> Ingested | str:
    """(On a node.) The local engine's ingest of the paths it holds; a refusal as its words."""
    from traceview.loader.ingest import ingest

    try:
        return ingest(paths, store, engine="local", **options)  # type: ignore[arg-type]
    except TraceviewError as e:
        return e.message


def ingest_on_nodes(
    paths: Sequence[str],
    store: Path,
    address: str | None,
    options: dict[str, object],
    on_ready: Callable[[str], None] | None = None,
) -> list[NodeIngest]:
    """Each path on every live node that holds it, ingested there (one task per node, pinned
    to it, with its CPUs). A path no node holds is an error, before anything is ingested."""
    with ray_session(address, on_ready) as ray:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = [n for n in ray.nodes() if n.get("Alive")]

        def pinned(node: dict, cpus: float):  # type: ignore[no-untyped-def]
            where = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
            return {"scheduling_strategy": where, "num_cpus": cpus, "max_retries": 0}

        probe = ray.remote(_held)
        held = ray.get([probe.options(**pinned(n, 0)).remote(list(paths)) for n in nodes])
        nowhere = [p for p in paths if not any(p in h for h in held)]
        if nowhere:
            raise TraceviewError(
                f"{nowhere[0]}: no such file or folder here or on any of the cluster's "
                f"{counted(len(nodes), 'node')}"
            )
        work = ray.remote(_ingest_here)
        runs = []
        for node, given in zip(nodes, _assigned(paths, held), strict=True):
            if given:
                cpus = max(1.0, float(node.get("Resources", {}).get("CPU", 1)))
                task = work.options(**pinned(node, cpus)).remote(
                    given, str(store), {**options, "jobs": int(cpus)}
                )
                runs.append((node["NodeManagerAddress"], tuple(given), task))
        out = []
        for node_address, mine, task in runs:
            try:
                done = ray.get(task)
            except ray.exceptions.RayError as e:  # its worker or node died
                out.append(NodeIngest(node_address, mine, None, why_failed(e), crashed=True))
                continue
            if isinstance(done, str):  # the node's ingest refused its paths
                out.append(NodeIngest(node_address, mine, None, done))
            else:
                out.append(NodeIngest(node_address, mine, done, None))
        return out
