"""An uploaded trace, held to bounds a shared server can keep: its size on the wire
(MAX_UPLOAD_MB), its size once inflated (a gzip of a few MB can hold GBs), and the memory of its
analysis; and one upload per session, let go when the session drops it from the uploader."""

from __future__ import annotations

import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

import msgspec
import streamlit as st

import traceview
from traceview import Job, TraceviewError
from traceview.dashboard import MAX_UPLOAD_MB

MAX_EXPANDED_MB = 2048  # a trace's bytes once inflated
MAX_MEMORY_MB = 2048  # its analysis (traceview --max-memory-mb)
UPLOADS = "uploads"  # session state: the upload of this session, by name, loaded
_GZIP = b"\x1f\x8b"
_STEP = 1 << 20


def expanded_bytes(data: bytes, cap: int) -> int:
    """The bytes `data` holds once inflated (itself, when it is no gzip), counted without
    holding them, up to just past `cap`."""
    if data[:2] != _GZIP:
        return len(data)
    total, rest = 0, data
    while rest[:2] == _GZIP and total <= cap:  # member after member
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pending = rest
        while not inflater.eof and total <= cap:
            try:
                out = inflater.decompress(pending, _STEP)
            except zlib.error:
                return total  # the analysis says what is wrong with it
            total += len(out)
            pending = inflater.unconsumed_tail
            if not out and not pending:
                return total  # cut short: the analysis says so
        rest = inflater.unused_data
    return total


def load_upload(name: str, read: Callable[[], bytes]) -> Job:
    """The uploaded trace (`read()` gives its bytes), analysed within the bounds."""
    data = read()
    if len(data) > MAX_UPLOAD_MB * 10**6:
        raise TraceviewError(f"{len(data) / 1e6:,.0f} MB is over the {MAX_UPLOAD_MB} MB limit")
    cap = MAX_EXPANDED_MB << 20
    if expanded_bytes(data, cap) > cap:
        raise TraceviewError(
            f"inflates to more than {MAX_EXPANDED_MB:,} MB, the limit for an upload: analyse it "
            "with `traceview dashboard FOLDER` on a folder that holds it"
        )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(name).name
        path.write_bytes(data)
        try:
            job = traceview.load(path, keep_intervals=True, max_memory_bytes=MAX_MEMORY_MB << 20)
        except TraceviewError as e:  # said by the name the user gave, not the server's path
            raise TraceviewError(e.message.replace(str(path), name), e.exit_code) from None
    return _named(job, path, name)


def _named(job: Job, path: Path, name: str) -> Job:
    """The job with the server's temporary path replaced by the upload's name wherever it is
    shown (the trace, its notes)."""

    def said(text: str) -> str:
        return text.replace(str(path), name)

    ranks = tuple(
        msgspec.structs.replace(
            r,
            trace=Path(name),
            notes=tuple(msgspec.structs.replace(n, message=said(n.message)) for n in r.notes),
        )
        for r in job.ranks
    )
    return msgspec.structs.replace(job, ranks=ranks, rank_files=())


def keep(name: str, job: Job) -> None:
    """This session's upload from now on (the one before it is let go)."""
    st.session_state[UPLOADS] = {name: job}


def let_go() -> None:
    """The upload is gone from the uploader: its analysis goes too."""
    st.session_state.pop(UPLOADS, None)
