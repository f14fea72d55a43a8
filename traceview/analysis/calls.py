"""One row per collective call: when it was ready, started and ended, its size and bandwidth,
and how much of it no compute covered."""

from __future__ import annotations

import numpy as np
import polars as pl

from traceview.analysis.spans import exposed_part
from traceview.analysis.stack import Stack
from traceview.model.batch import keyed, with_part_type, within_part
from traceview.model.distinct import per_distinct
from traceview.tables import CALLS_SCHEMA

# nccl-tests' bus bandwidth factors for a group of n ranks.
_BUS_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send": lambda n: 1.0,
    "recv": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}


def bus_factor(collective: str | None, n: int | None) -> float | None:
    factor = _BUS_FACTOR.get(collective or "")
    if factor is None or n is None or n < 1:
        return None
    return factor(n)


def bus_factors(calls: pl.DataFrame) -> pl.Series:
    """bus_factor of each row's collective and group_size, called once per distinct pair (a
    Gloo trace has a call every few events, of a few kinds and sizes)."""
    pairs = calls.select("collective", "group_size")
    factors = per_distinct(
        pairs, pairs.columns, lambda c, n: (bus_factor(c, n),), {"factor": pl.Float64()}
    )
    return factors["factor"]


def traffic_factor(collective: str | None, n: int | None) -> float | None:
    """What a call puts on the wire per element of its message: the nccl-tests bus factor
    (what its busiest link carries), and nothing on a group of one rank."""
    if n == 1:
        return 0.0
    return bus_factor(collective, n)


def collective_calls(stack: Stack) -> pl.DataFrame:
    """Every communication interval of each rank, in start order, with its bandwidths: busbw
    only where the size of the group the call ran on is known (never the world by default).
    One table for the stack (with `part` where it has several)."""
    iv = stack.intervals
    comm = iv.filter(pl.col("kind") == "comm").sort(keyed(iv, "ts_ns"), maintain_order=True)
    if comm.height == 0:
        return pl.DataFrame(schema=with_part_type(CALLS_SCHEMA, iv))
    # In moved time (analysis/stack.py): no part's calls reach another's.
    starts, ends = stack.moved(comm, "ts_ns"), stack.moved(comm, "end_ns")
    exposed = exposed_part(stack.compute, starts, ends)
    # Calls in start order: the earlier ones cover [start, their furthest end) of this one.
    reach = np.maximum.accumulate(ends)
    fresh = np.maximum(starts, np.concatenate(([starts[0]], reach[:-1])))
    share = exposed_part(stack.compute, np.minimum(fresh, ends), ends)
    dur = pl.col("end_ns") - pl.col("ts_ns")
    algbw = pl.when(dur > 0).then(pl.col("bytes") / dur)  # bytes per ns = GB/s
    return (
        comm.with_columns(
            _factor=bus_factors(comm),
            exposed_ns=pl.Series(exposed, dtype=pl.Int64),
            exposed_share_ns=pl.Series(share, dtype=pl.Int64),
        )
        .select(
            *keyed(comm),
            "rank",
            "step",
            index=within_part(pl.int_range(pl.len(), dtype=pl.Int64), comm),
            collective="collective",
            pg="pg",
            seq="seq",
            group_size="group_size",
            module="module",
            backward="backward",
            lane="lane",
            ready_ns="launch_ns",
            start_ns="ts_ns",
            end_ns="end_ns",
            queue_ns=pl.col("ts_ns") - pl.col("launch_ns"),
            dur_ns=dur,
            bytes="bytes",
            elements="elements",
            algbw_gbps=algbw,
            busbw_gbps=algbw * pl.col("_factor"),
            exposed_ns="exposed_ns",
            exposed_share_ns="exposed_share_ns",
        )
        .cast(CALLS_SCHEMA)  # type: ignore[arg-type]
    )
