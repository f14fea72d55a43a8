"""Whether a stored job is whole: its job record (every trace its ingests read, the summary each
partition holds) against the partitions in place."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from traceview.errors import TraceviewError
from traceview.store import layout


def stored_incomplete(job_folder: Path, partitions: Sequence[Path]) -> str | None:
    """What the stored job lacks: why its run was incomplete when it was ingested (as for its
    traces), and the ranks its ingests stored or failed to store that `partitions` lack."""
    record = _record(job_folder)
    if record is None:  # every commit writes it: gone, the job cannot say what it lacks
        return (
            f"its job record ({layout.JOB_RECORD}) is gone: which ranks the job held cannot be "
            "told; ingest the job again"
        )
    said = [record.incomplete] if record.incomplete else []
    if lost := _lost_ranks(record.traces, {p.name.removeprefix("rank=") for p in partitions}):
        said.append(lost)
    return "; ".join(said) or None


def accepted_summaries(partitions: Sequence[Path]) -> list[tuple[str, ...] | None]:
    """For each partition, the hashes its job record accepts for its summary.json, or for its
    pack's summaries (None where the record keeps none: written before it kept them, or gone,
    which is said apart)."""
    records: dict[Path, layout.JobRecord | None] = {}
    # Each partition's job folder, one look per parent: a pack's ranks' by the pack's text
    # (a path in object storage hashes at ~20 µs).
    jobs: dict[object, Path] = {}
    out = []
    for folder in partitions:
        pack = layout.pack_of(folder)
        parent = pack or layout.parent_of(folder)
        job = jobs.get(parent) or jobs.setdefault(parent, layout.job_of(folder))
        if job not in records:
            try:
                records[job] = _record(job)
            except TraceviewError:
                records[job] = None  # a broken record is said where the job is read
        record = records[job]
        key = layout.PACK if pack else folder.name.removeprefix("rank=")
        out.append(record.summaries.get(key) if record is not None else None)
    return out


def _record(job_folder: Path) -> layout.JobRecord | None:
    return layout.read_job_record(
        job_folder.parent, job_folder.name.removeprefix(layout.JOB_PREFIX)
    )


def _lost_ranks(traces: Sequence[layout.StoredTrace], present: set[str]) -> str | None:
    """'1 of 2 ranks in the store: …' when a rank an ingest stored is gone, or a trace could
    not be stored at all; None when every trace ingested has its partition."""
    expected = {layout.rank_key(t.rank) for t in traces if t.failed is None or t.rank is not None}
    missing = sorted(expected - present, key=layout.rank_order)
    never = [t for t in traces if t.failed is not None and t.rank is None]
    stale = [t for t in traces if t.failed is not None and layout.rank_key(t.rank) in present]
    said = []
    if missing:
        ranks = ", ".join(_rank_name(k) for k in missing)
        said.append(
            f"{ranks} missing (its partition gone, never completed, or a link out of the folder "
            "read: ingest the job again)"
        )
    said += [f"not stored: {t.failed}" for t in never[:3]]
    if len(never) > 3:
        said.append(f"and {len(never) - 3} more traces not stored")
    said += [
        f"{_rank_name(layout.rank_key(t.rank))} is from an earlier version of its trace, which "
        f"could not be stored again ({t.failed})"
        for t in stale[:3]
    ]
    if not missing and not never and not stale:
        return None
    total = len(expected | present) + len(never)
    return f"{len(present)} of {total} ranks in the store: " + "; ".join(said)


def _rank_name(key: str) -> str:
    return "the rank-less trace" if key == layout.NO_RANK else f"rank {key}"
