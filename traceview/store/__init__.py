"""The trace store (docs/store.md): Parquet partitions per job and rank, written by
`traceview ingest` or the profiler handler, read wherever traces are read."""
