"""The front door: paths → runs → jobs → ranks. The CLI, the dashboard and Python users all
load through here; nothing below it reads a file but the parser."""

from traceview.loader.front_door import load, load_runs
from traceview.loader.job import Job, Runs
from traceview.loader.listing import RunSummary, summarize
from traceview.loader.parallel import Failure
from traceview.loader.rank import analyze_trace
from traceview.loader.sources import RunSource, find_runs, is_trace_file, read_paths

# The limits the parser reads within, for the options that change them.
from traceview.parse.budget import BYTES_PER_EVENT, NAME_COPIES, machine_memory
from traceview.parse.stream import MAX_EVENT_BYTES

# What `ingest --shard K/N` names (the loader's ingest takes it).
from traceview.store.shards import Shard, parsed_shard

__all__ = [
    "BYTES_PER_EVENT",
    "MAX_EVENT_BYTES",
    "NAME_COPIES",
    "Failure",
    "Job",
    "RunSource",
    "RunSummary",
    "Runs",
    "Shard",
    "analyze_trace",
    "find_runs",
    "is_trace_file",
    "load",
    "load_runs",
    "machine_memory",
    "parsed_shard",
    "read_paths",
    "summarize",
]
