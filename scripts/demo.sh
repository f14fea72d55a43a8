#!/usr/bin/env bash
# The main job on a fresh machine: set up, train with every strategy on CPU under torchrun
# (real profiler traces), analyse the traces, and write the reports into demo_out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
venv="${TRACEVIEW_VENV:-.venv}"
out=demo_out
rm -rf "$out"
mkdir -p "$out"
echo "== 1. harness: DDP, ZeRO-1, ZeRO-2, ZeRO-3 at DP 1 and 2 (CPU, Gloo, tiny GPT)"
"$venv/bin/python" -m instrumented_train.sweep --strategies ddp,zero1,zero2,zero3 --dp 1,2 \
  --out "$out/sweep" --device cpu --bucket-cap-mb 2 -- --seq-len 64 --micro-batch 4 --active 2
echo "== 2. traceview: overlap and exposed communication per run, rank and step"
for run in "$out"/sweep/*-dp*/; do
  name=$(basename "$run")
  "$venv/bin/traceview" analyze "$run" --output "$out/$name.txt"
  "$venv/bin/traceview" analyze "$run" --format json --output "$out/$name.json"
done
cat "$out/ddp-dp2.txt" "$out/zero3-dp2.txt"
echo "== 3. reports: $out/*.txt and $out/*.json; traces and run records: $out/sweep/"
