#!/usr/bin/env bash
# On the GPU, from the repository root: the off-shape counters (counters.py), the naive kernels'
# stride curve (strides.py) and study.bank_probe with 96 variants; everything under $OUT.
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_extensions
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; S=docs/notes/predict/offshape
python3 -c "import cuda_kernels; cuda_kernels.load()" > "$OUT/build.log" 2>&1 || tail -5 "$OUT/build.log"
t0=$(date +%s)
timeout 120 python3 $S/strides.py "$OUT/strides.jsonl" > "$OUT/strides.log" 2>&1; tail -3 "$OUT/strides.log"
echo "strides: $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 120 python3 -m study.bank_probe --out "$OUT/bp" --variants 96 > "$OUT/bp.log" 2>&1; tail -2 "$OUT/bp.log"
echo "bank probe: $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
rm -rf "$OUT/probe" && cp -r reports "$OUT/probe"
mv "$OUT/probe/data/ncu.csv" "$OUT/committed_ncu.csv"
timeout 330 python3 $S/counters.py "$OUT/probe" \
  "K1,T1@4096,4096,4096;K1,T1,K12,G12,TA,T5p@4097,4097,4097;K1,T1,K12@4100,4100,4100;T1,K2,G12,G12T,G15,G10@1,18944,3584" \
  > "$OUT/counters.log" 2>&1; tail -4 "$OUT/counters.log"
echo "counters: $(( $(date +%s) - t0 )) s"
cp "$OUT/probe/data/ncu.csv" "$OUT/offshape_ncu.csv" 2>/dev/null
rm -rf "$OUT/probe" "$OUT/committed_ncu.csv"
