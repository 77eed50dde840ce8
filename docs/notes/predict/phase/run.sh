#!/usr/bin/env bash
# On the GPU, from the repository root: phase.py (each multi-block rung at 1, 2, ... blocks an SM,
# then stamped at every barrier at its own residency); with LATENCY=1 also the pointer chase of
# ../offshape/latency.py. Everything under $OUT; compare.py sets the model beside it (no GPU).
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; S=docs/notes/predict
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$(date +%s)
timeout 300 python3 $S/phase/phase.py "$OUT" 2>&1 | tee "$OUT/phase.log" | tail -40
echo "phase: $(( $(date +%s) - t0 )) s"
python3 $S/phase/stamps.py "$OUT/k3_stamps.npz" | tee "$OUT/stamps.txt"
if [ -n "${LATENCY:-}" ]; then
  timeout 120 python3 $S/offshape/latency.py "$OUT/latency.jsonl" > "$OUT/latency.log" 2>&1
  cat "$OUT/latency.jsonl"
fi
rm -f "$OUT"/*.cubin "$OUT"/*_stamped.cu
