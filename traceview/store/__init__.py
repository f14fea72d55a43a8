"""The trace store (README "Trace store"): Parquet partitions per job and rank, written by
`traceview ingest` or the profiler handler, read wherever traces are read."""
