"""Traces on the disks of a Ray cluster's nodes, not of the machine ingesting them: each node
that holds a path ingests it there, with its own cores, into the store every node sees — so a
job whose ranks wrote on several hosts' local disks (the same path on each) becomes one job in
the store, each node adding the ranks it holds (docs/store.md "Traces on each node's disk")."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from traceview.errors import TraceviewError
from traceview.loader.engines import ray_session, why_failed
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


def _held(paths: Sequence[str]) -> list[str]:
    """(On a node.) Those of the paths this node has."""
    return [p for p in paths if os.path.exists(p)]


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
        for node, mine in zip(nodes, held, strict=True):
            if mine:
                cpus = max(1.0, float(node.get("Resources", {}).get("CPU", 1)))
                task = work.options(**pinned(node, cpus)).remote(
                    mine, str(store), {**options, "jobs": int(cpus)}
                )
                runs.append((node["NodeManagerAddress"], tuple(mine), task))
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
