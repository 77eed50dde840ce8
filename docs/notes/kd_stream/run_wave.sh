#!/usr/bin/env bash
# On the GPU, from the repository root: the third family of KD's streaming variants (the splits
# of K interleaved by chunk, and the unsplit wide blocks) against the vendor's kernels on the
# decode panel at M = 1 and 2, every variant three times (kd_sweep.py round 2, interleaved
# orders). Rows in $OUT/kd_wave.jsonl.
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_extensions
export KD_SWEEP_FAMILY=wave KD_SWEEP_MS=1,2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; S=docs/notes/kd_stream
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > "$OUT/wheels.log" 2>&1
export PYTHONPATH="/tmp/site:$PYTHONPATH"  # nvmath-python, for K0L
t0=$(date +%s)
python3 $S/kd_sweep.py "$OUT/kd_wave.jsonl" 2 > "$OUT/wave.log" 2>&1
echo "wave: $(( $(date +%s) - t0 )) s"
