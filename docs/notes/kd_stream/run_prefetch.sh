#!/usr/bin/env bash
# On the GPU, from the repository root: the second family of KD's streaming variants (the next
# chunk's loads issued before the current chunk's FMAs, and wider blocks) against the vendor's
# kernels on the decode panel at M <= 8, in two rounds, as run.sh times the first family; then,
# where TESTS_K is set, the GPU tests it selects. Rows in $OUT/kd_prefetch.jsonl.
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_extensions KD_SWEEP_FAMILY=prefetch
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; S=docs/notes/kd_stream
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > "$OUT/wheels.log" 2>&1
export PYTHONPATH="/tmp/site:$PYTHONPATH"  # nvmath-python, for K0L
t0=$(date +%s)
python3 $S/kd_sweep.py "$OUT/kd_prefetch.jsonl" 1 > "$OUT/prefetch1.log" 2>&1
pick=$(python3 $S/pick.py "$OUT/kd_prefetch.jsonl" 2> "$OUT/prefetch_pick1.txt")
echo "round 1: $(( $(date +%s) - t0 )) s; picked $pick"
python3 $S/kd_sweep.py "$OUT/kd_prefetch.jsonl" 2 "$pick" > "$OUT/prefetch2.log" 2>&1
echo "round 2: $(( $(date +%s) - t0 )) s"
