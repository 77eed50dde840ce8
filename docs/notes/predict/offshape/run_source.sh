#!/usr/bin/env bash
# On the GPU, from the repository root: per-instruction counters (source.py) of the kernels the
# model misses at decode b1 and 4097³, and at 4096³ for comparison; one gzipped CSV under $OUT.
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_extensions
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; S=docs/notes/predict/offshape
t0=$(date +%s)
python3 -c "import cuda_kernels; cuda_kernels.load()" > /tmp/build.log 2>&1 || tail -5 /tmp/build.log
echo "build: $(( $(date +%s) - t0 )) s"
timeout ${SOURCE_TIMEOUT:-420} python3 $S/source.py "$OUT/source.csv.gz" \
  "${SOURCE_SPEC:-G12T,G12,K12,G15@1,18944,3584;K12@4097,4097,4097}"
echo "source: $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
