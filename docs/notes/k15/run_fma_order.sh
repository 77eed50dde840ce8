#!/usr/bin/env bash
# On the GPU machine, from the repository's root: the four FFMA orders of K12's tile timed beside
# cuBLAS (python -m study.sweep_cuda --only FMA_ORDER, for K15 and K12 at 4096^3), then K12 and K15
# before and after fma_order2.patch (the tile's default order 2, row by row turning back) at 2048^3,
# 4096^3 and 8192^3 with the vendor's kernels beside them, the GPU tests of K12 and K15 in between
# (docs/notes/predict/offshape/edge/wrap.sh). SWEEP_KERNELS (default "K15 K12"; empty: none) the
# sweeps. Results under $OUT.
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
for k in ${SWEEP_KERNELS-K15 K12}; do
  python3 -m study.sweep_cuda --kernel "$k" --only FMA_ORDER --top 4 --target-s 0.2 --budget-s 100 \
    --out "$OUT/sweep" >> "$OUT/sweep.log" 2>&1 || echo "sweep $k failed"
done
[ -f "$OUT/sweep.log" ] && tr "\r" "\n" < "$OUT/sweep.log" | grep -v '^\s*$' | tail -6
PATCH=docs/notes/k15/fma_order2.patch SHAPES="${SHAPES:-4096,4096,4096 2048,2048,2048 8192,8192,8192}" \
  BASE_KERNELS=K0,K0L,K12,K15 WRAP_KERNELS=K0,K0L,K12,K15 TESTS_K="K12 or K15" \
  bash docs/notes/predict/offshape/edge/wrap.sh
