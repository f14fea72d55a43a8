"""Whether the ranks' collectives line up (docs/metrics.md "Desync"): the same words for the
dashboard's Overlap page and the report."""

from __future__ import annotations

from traceview import Job
from traceview.documents import build
from traceview.plain import counted

SHOWN = 20  # signs listed on a page; `traceview ranks --format json` holds every one


def desync_words(job: Job) -> tuple[str, list[str]] | None:
    """(what was checked and what came of it, each sign in a sentence); None below two ranks."""
    found = build.desync(job.desync)
    if found is None:
        return None
    said = [f"Not judged: {why}." for why in found.unjudged]
    if found.groups:
        checked = (
            f"{counted(found.calls, 'call')} of {counted(found.groups, 'group')} lined up by "
            f"{found.keyed_by}"
        )
        said.insert(
            0,
            f"{checked}: "
            + (
                f"{counted(len(found.signs), 'sign')} that they do not line up"
                if found.signs
                else "every rank ran the same calls"
            )
            + " (docs/metrics.md, “Desync”).",
        )
    signs = [s.said for s in found.signs[:SHOWN]]
    if len(found.signs) > SHOWN:
        signs.append(f"… {len(found.signs) - SHOWN} more: `traceview ranks --format json`")
    return " ".join(said), signs
