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
  --out "$out/sweep" --device cpu --bucket-cap-mb 2 -- --seq-len 128 --micro-batch 8 --active 2 \
  --baseline-steps 8 --threads 1
echo "== 2. traceview: overlap and exposed communication per run, rank and step"
for run in "$out"/sweep/*-dp*/; do
  name=$(basename "$run")
  "$venv/bin/traceview" analyze "$run" --output "$out/$name.txt"
  "$venv/bin/traceview" analyze "$run" --format json --output "$out/$name.json"
done
cat "$out/ddp-dp2.txt" "$out/zero3-dp2.txt"
echo "== 3. traceview: collectives, ranks, and every run compared against the ZeRO theory"
"$venv/bin/traceview" collectives "$out/sweep/ddp-dp2" --output "$out/ddp-dp2.collectives.txt"
"$venv/bin/traceview" ranks "$out/sweep/zero3-dp2" --output "$out/zero3-dp2.ranks.txt"
"$venv/bin/traceview" compare "$out/sweep" --output "$out/compare.txt"
"$venv/bin/traceview" compare "$out/sweep" --format json --output "$out/compare.json"
"$venv/bin/traceview" export "$out/sweep/ddp-dp2" --output "$out/ddp-dp2.timeline.json.gz"
"$venv/bin/traceview" report "$out/sweep" --output "$out/report.html"
cat "$out/compare.txt"
echo "== reports in $out/ (text, JSON, report.html, a Perfetto timeline); traces and run records in $out/sweep/"
echo "   browse them: .venv/bin/traceview dashboard $out/sweep"
echo "   to call traceview and torchrun by name: source .venv/bin/activate"
