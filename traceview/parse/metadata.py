"""The trace's own description of itself: rank, world size, clock base, devices."""

from __future__ import annotations

from typing import Any

import msgspec

from traceview.errors import Note
from traceview.parse.run_record import TRACE_METADATA_KEY, TraceRun, trace_run


class TraceMeta(msgspec.Struct, frozen=True, kw_only=True):
    rank: int | None  # None when the trace does not say: never guessed
    world_size: int | None
    backend: str | None
    pg_config: tuple[dict[str, Any], ...] = ()
    pg_count: int | None = None  # how many process groups the job made (pg_config may list fewer)
    nccl_version: str | None = None
    base_time_ns: int | None = None  # add to a trace timestamp (ns) for Unix epoch time
    schema_version: int | None = None
    devices: tuple[str, ...] = ()  # GPU names from deviceProperties
    host_name: str | None = None
    run: TraceRun | None = None  # the harness' run identity, where the trace carries it
    extra: dict[str, Any] = msgspec.field(default_factory=dict)  # every other top-level key


MAX_WORLD = 2**31 - 1  # ranks are int32 in the model
_KNOWN = {
    "distributedInfo",
    "baseTimeNanoseconds",
    "schemaVersion",
    "deviceProperties",
    "host_name",
    TRACE_METADATA_KEY,
}


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def read_meta(raw: dict[str, Any], notes: list[Note]) -> TraceMeta:
    dist = raw.get("distributedInfo")
    if not isinstance(dist, dict):
        dist = {}
        notes.append(
            Note(
                message="no distributedInfo: rank and world size unknown (the profiler "
                "records them when torch.distributed is initialised before profiling starts)"
            )
        )
    rank, world = _whole(dist.get("rank")), _whole(dist.get("world_size"))
    if (
        dist
        and world is None
        and "world_size" not in dist
        and rank is not None
        and (0 <= rank < MAX_WORLD)
    ):
        # {"rank": 1} alone still says which rank this is: only the world size is unknown.
        notes.append(
            Note(message=f"distributedInfo gives rank {rank} but no world_size: world size unknown")
        )
    elif dist and (rank is None or world is None or not 0 <= rank < world <= MAX_WORLD):
        notes.append(
            Note(
                message=f"distributedInfo rank={dist.get('rank')!r} world_size="
                f"{dist.get('world_size')!r} is not usable: rank and world size unknown"
            )
        )
        rank = world = None
    run, problem = trace_run(raw.get(TRACE_METADATA_KEY))
    if problem:
        notes.append(Note(message=problem))
    devices = raw.get("deviceProperties")
    pg_config = dist.get("pg_config")
    return TraceMeta(
        rank=rank,
        world_size=world,
        backend=dist.get("backend") if isinstance(dist.get("backend"), str) else None,
        pg_config=tuple(pg for pg in pg_config if isinstance(pg, dict))
        if isinstance(pg_config, list)
        else (),
        pg_count=_whole(dist.get("pg_count")),
        nccl_version=str(dist["nccl_version"]) if "nccl_version" in dist else None,
        base_time_ns=_whole(raw.get("baseTimeNanoseconds")),
        schema_version=_whole(raw.get("schemaVersion")),
        devices=tuple(str(d.get("name", "?")) for d in devices if isinstance(d, dict))
        if isinstance(devices, list)
        else (),
        host_name=raw.get("host_name") if isinstance(raw.get("host_name"), str) else None,
        run=run,
        extra={k: v for k, v in raw.items() if k not in _KNOWN},
    )
