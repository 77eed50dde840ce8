#!/usr/bin/env bash
# On the GPU, from the repository root: two_kernels.py at 4096^3, 8192^3 and 2048^3. Rows in
# $OUT/two_kernels.jsonl.
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_extensions
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > "$OUT/wheels.log" 2>&1
export PYTHONPATH="/tmp/site:$PYTHONPATH"  # nvmath-python, for K0L
python3 docs/notes/k15/two_kernels.py "$OUT/two_kernels.jsonl" 4096,4096,4096 8192,8192,8192 2048,2048,2048 \
  > "$OUT/two_kernels.log" 2>&1
