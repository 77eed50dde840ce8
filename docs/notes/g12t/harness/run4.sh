#!/usr/bin/env bash
# From the repository root on the GPU machine: probe4 (G12T's register caps).
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -c "import cuda_kernels; cuda_kernels.load()" > "$OUT/build.log" 2>&1
timeout 300 python3 docs/notes/g12t/harness/probe4.py "$OUT/g12t4.jsonl" > "$OUT/probe4.log" 2>&1
grep summary "$OUT/g12t4.jsonl"
