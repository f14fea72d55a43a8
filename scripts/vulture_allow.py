# Names the dead-code check (scripts/lint.sh, vulture) cannot see used, each with where it is.
# ruff: noqa
_ = object()

# The package's lazy public names (PEP 562): Python calls these.
_.__getattr__
_.__dir__
# Record and result fields written to JSON, Parquet or a run record, read by their users.
_.compute_only_ns  # Breakdown: read through METRICS by name
_.between_passes_ns  # IdleSplit
_.after_last_collective_ns
_.among_kernels_ns
_.steps_measured  # ScalingRow
_.step_source
_.since  # TraceArg: the documentation of when PyTorch began writing the arg
_.schema_version  # TraceMeta
_.measured_on  # the run record (parse/run_record.py)
_.unprofiled_step_seconds
_.profiled_step_seconds
_.model_state_bytes_by_phase
_.profiler_step
_.throughput
_.profiler_overhead
_.inter_op_threads
_.other_busy_cores_before  # MachineLoad: written by the sweep, for the reader of run.json
_.traceview_version  # a partition's summary
# Spawned workers: the main module is made to look like no file (loader/workers.py).
_.__spec__
# PerRankStep's parts, read by name (getattr) in analysis/scaling_findings.py.
_.exposed_comm
