#!/usr/bin/env bash
# On the GPU, from the repository root: interference.py, then placement.py's first process, in one
# session. Rows in $OUT/interference.jsonl and $OUT/placement_0.jsonl.
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_extensions
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; S=docs/notes/kd_stream
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > "$OUT/wheels.log" 2>&1
export PYTHONPATH="/tmp/site:$PYTHONPATH"  # nvmath-python, for K0L
python3 $S/interference.py "$OUT/interference.jsonl" > "$OUT/interference.log" 2>&1
python3 $S/placement.py "$OUT/placement_0.jsonl" > "$OUT/placement.log" 2>&1
