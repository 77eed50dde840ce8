#!/usr/bin/env bash
# On the GPU, from the repository root: KD's streaming variants against the vendor's kernels on
# the decode panel at M <= 8 (two rounds), then the operator's host cost taken apart.
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_extensions
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; S=docs/notes/kd_stream
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > "$OUT/wheels.log" 2>&1
export PYTHONPATH="/tmp/site:$PYTHONPATH"  # nvmath-python, for K0L
( python3 -c "import cuda_kernels; cuda_kernels.load()" > "$OUT/build.log" 2>&1 ) &
bp=$!
python3 $S/kd_sweep.py "$OUT/kd_sweep.jsonl" 1 > "$OUT/sweep1.log" 2>&1
pick=$(python3 $S/pick.py "$OUT/kd_sweep.jsonl" 2> "$OUT/pick1.txt")
python3 $S/kd_sweep.py "$OUT/kd_sweep.jsonl" 2 "$pick" > "$OUT/sweep2.log" 2>&1
wait $bp
timeout 150 python3 $S/host.py "$OUT/host.jsonl" > "$OUT/host.log" 2>&1
tar czf "$OUT/kd_stream.tgz" -C "$OUT" --exclude kd_stream.tgz .
