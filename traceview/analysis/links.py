"""Bandwidth against the link's peak (docs/metrics.md "Against the link's peak"): per collective
type and message size, the median bus bandwidth as a share of the peak, per direction, of the
link the job's collectives ran on — the GPUs' own links within a node (from the GPU's name in
the trace's deviceProperties, by the table below), or a speed the user gives (--link-gbps), which
also covers links across nodes, whose speed no trace records."""

from __future__ import annotations

import re

import msgspec
import polars as pl

# GPU name → the link between GPUs of one node and its peak per direction (GB/s, 1e9 bytes/s):
# half the total bidirectional bandwidth the vendor's datasheet gives per GPU. Only names that
# say which board they are: a PCIe card may or may not carry an NVLink bridge, so none is listed.
GPU_LINKS: tuple[tuple[str, str, float, str], ...] = (
    # pattern, link, GB/s per direction, source (the datasheet's total per GPU)
    (r"B200", "NVLink 5", 900.0, "NVIDIA B200 datasheet: NVLink 1.8 TB/s"),
    (r"H100.*(SXM|HBM3)|H200", "NVLink 4", 450.0, "NVIDIA H100/H200 SXM datasheets: 900 GB/s"),
    (r"A100.*SXM", "NVLink 3", 300.0, "NVIDIA A100 SXM4 datasheet: NVLink 600 GB/s"),
    (r"V100.*SXM2", "NVLink 2", 150.0, "NVIDIA V100 SXM2 datasheet: NVLink 300 GB/s"),
    (r"MI300X", "Infinity Fabric", 448.0, "AMD Instinct MI300X datasheet: 896 GB/s aggregate"),
)


class Link(msgspec.Struct, frozen=True, kw_only=True):
    name: str  # "NVLink 3", or "given" (--link-gbps)
    gbps: float  # its peak per direction
    scope: str  # "within a node", "as given"
    basis: str  # what decided it, in words


def link_of(
    devices: set[str], hosts: set[str | None], given_gbps: float | None
) -> tuple[Link | None, str]:
    """The link a job's collectives ran on, and why (or why none is known). `devices`: the GPU
    names its traces list; `hosts`: their host names (None where a trace records none)."""
    if given_gbps is not None:
        return Link(name="given", gbps=given_gbps, scope="as given",
                    basis=f"--link-gbps {given_gbps:g}"), ""  # fmt: skip
    if not devices:
        return None, "the traces list no GPU (CPU-only, or no deviceProperties): give --link-gbps"
    if len(devices) > 1:
        return None, f"the traces list different GPUs ({', '.join(sorted(devices))})"
    (gpu,) = devices
    known = next(((n, g, s) for p, n, g, s in GPU_LINKS if re.search(p, gpu)), None)
    if known is None:
        return None, f"{gpu}: not in the table of GPU links (docs/metrics.md): give --link-gbps"
    name, gbps, source = known
    named = {h for h in hosts if h is not None}
    if len(named) > 1:
        return None, (
            f"the ranks ran on {len(named)} hosts: their collectives cross the network, whose "
            "speed no trace records: give --link-gbps"
        )
    if named and None not in hosts:
        where = f"every trace from host {next(iter(named))}"
    else:
        return None, (
            "the traces do not say which host they ran on, so whether the collectives stayed "
            "within a node is unknown: give --link-gbps"
        )
    return Link(name=name, gbps=gbps, scope="within a node",
                basis=f"{gpu} ({source}); {where}"), ""  # fmt: skip


def against_peak(calls: pl.DataFrame, link: Link) -> pl.DataFrame:
    """Per collective type and message size: calls, the median bus bandwidth (on transfer time
    where the ranks are aligned, else a lower bound on the whole duration) and its share of the
    link's peak per direction."""
    known = calls.filter(pl.col("busbw_gbps").is_not_null() & pl.col("bytes").is_not_null())
    return (
        known.group_by("collective", "bytes")
        .agg(
            calls=pl.len(),
            busbw_gbps=pl.col("busbw_gbps").median(),
            lower_bound=(pl.col("bandwidth_on") == "duration").any(),
        )
        .with_columns(peak_pct=100 * pl.col("busbw_gbps") / link.gbps)
        .sort("collective", "bytes")
    )
