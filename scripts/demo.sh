#!/usr/bin/env bash
# Set up (if needed) and run the main job: analyse real multi-GPU traces and write reports.
# Reports go to demo_out/ (table, JSON, CSV); the table is also printed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
venv="${TRACEVIEW_VENV:-.venv}"
out=demo_out
mkdir -p "$out"
traces=tests/fixtures/traces
run() { "$venv/bin/traceview" analyze "$@"; }
echo "== two ranks of a 128-GPU NCCL job (one trace per rank, analysed in parallel)"
run "$traces/nccl_sampled_w128" --output "$out/w128.txt"
run "$traces/nccl_sampled_w128" --format json --output "$out/w128.json"
run "$traces/nccl_sampled_w128" --format csv --output "$out/w128.csv"
cat "$out/w128.txt"
echo "== rank 0 of a 2-GPU DDP ResNet job, one step"
run "$traces/nccl_ddp_w2_rank0_step5.json.gz" | tee "$out/ddp_w2.txt"
echo "reports written to $out/"
