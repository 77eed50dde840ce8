#!/usr/bin/env bash
# On the GPU, from the repository root: kd_bulk.cu's variants against the vendor's GEMV and KD at
# M = 1 on the decode panel's shapes (kd_bulk.py). Rows in $OUT/kd_bulk.jsonl.
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_extensions
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; S=docs/notes/kd_stream
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > "$OUT/wheels.log" 2>&1
export PYTHONPATH="/tmp/site:$PYTHONPATH"  # nvmath-python, for K0L
t0=$(date +%s)
python3 $S/kd_bulk.py "$OUT/kd_bulk.jsonl" > "$OUT/bulk.log" 2>&1
echo "bulk: $(( $(date +%s) - t0 )) s"
