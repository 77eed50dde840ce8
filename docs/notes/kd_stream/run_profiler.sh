#!/usr/bin/env bash
# On the GPU, from the repository root: profiler_cost.py in a process as Kineto leaves it by
# default, then with TEARDOWN_CUPTI=1 set before torch is imported, then set after it; rows in
# $OUT/profiler_cost.jsonl.
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_extensions
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; S=docs/notes/kd_stream
python3 -c "import cuda_kernels; cuda_kernels.load()" > "$OUT/build.log" 2>&1
python3 $S/profiler_cost.py "$OUT/profiler_cost.jsonl" > "$OUT/profiler_cost.log" 2>&1
python3 $S/profiler_cost.py "$OUT/profiler_cost.jsonl" --teardown >> "$OUT/profiler_cost.log" 2>&1
python3 $S/profiler_cost.py "$OUT/profiler_cost.jsonl" --teardown-late >> "$OUT/profiler_cost.log" 2>&1
