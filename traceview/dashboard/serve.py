"""The dashboard's server process (`traceview dashboard` starts it): Streamlit, and beside it a
thread that loads what the first page shows while the server starts and the browser connects.

The Scaling page opens on every run of the folder: the pages' imports, the runs found, each run
loaded and its findings. Loaded here first, into the same process-wide caches the pages read
(traceview/dashboard/data.py), the first page finds them ready or being made (a page waits for
a value being made rather than making it twice). At 10,240 ranks that is most of the page's time
(docs/performance.md). A run this thread cannot load is left to the page, which says why."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time

from traceview.dashboard import ROOT_ENV
from traceview.errors import TraceviewError

# How long the thread waits for Streamlit's runtime (its caches' home) before it gives up.
RUNTIME_WAIT_S = 60.0
THREAD = "traceview warm-up"
# Where Streamlit warns of a thread that runs its cached functions outside any page's run:
# this thread does so on purpose, and is not warned about.
_CONTEXT_LOGGER = "streamlit.runtime.scriptrunner_utils.script_run_context"


class _NotTheWarmUp(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.threadName != THREAD


def _warm(root: str) -> None:
    """The thread: the pages' imports, then, once Streamlit's runtime (the caches' home) is
    made, the first page's runs."""
    from streamlit import runtime

    from traceview import preload
    from traceview.dashboard import data  # noqa: F401 -- altair, pandas, traceview

    preload.collect_less()  # a job of many ranks is many objects that live on
    logging.getLogger(_CONTEXT_LOGGER).addFilter(_NotTheWarmUp())
    deadline = time.monotonic() + RUNTIME_WAIT_S
    while not runtime.exists():
        if time.monotonic() > deadline:
            return
        time.sleep(0.02)
    warm_up(root)


def warm_up(root: str) -> None:
    """Every run under `root` loaded, with its findings, into the pages' caches."""
    from traceview.dashboard import data

    try:
        runs = data.discover_runs(root)
    except TraceviewError:
        return  # the page says why
    for run in runs["run"]:
        try:
            job = data.job_for(run)
            job.findings  # noqa: B018 -- cached on the job: the first page's slowest figures
        except TraceviewError:
            continue  # this run's error is the page's to say


def main() -> int:
    """`python -m traceview.dashboard.serve run APP [options] -- PATH`: Streamlit's own command
    line, with the warm-up thread started first."""
    root = os.environ.get(ROOT_ENV)
    if root:
        threading.Thread(target=_warm, args=(root,), name=THREAD, daemon=True).start()
    from streamlit.web import cli

    sys.argv = ["streamlit", *sys.argv[1:]]
    return int(cli.main() or 0)


if __name__ == "__main__":
    sys.exit(main())
