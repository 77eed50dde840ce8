#!/usr/bin/env bash
# The third design's variants predicted from their SASS before any of them ran (study.predict
# --cu): the whole-tile kernel at the grid of the whole waves and the tail at one block per SM,
# each given the shape whose multiply-adds are its tiles' (M scaled), beside K15 as registered.
# The design's time is the sum of its two kernels' (the launch's fixed cost counted once each).
# Run from the repository's root: bash docs/notes/k15/predict_two_kernels.sh
set -euo pipefail
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cp docs/notes/k15/k15_two_kernels.cu cuda_kernels/*.cuh "$d/"
for n in 4096 8192; do python3 -m study.predict --kernel K15 --shape $n,$n,$n; done
# 4096^3: 512 tiles, 396 whole (3 waves of 132), 116 in the tail; 8192^3: 2048, 1980, 68
for w in 0 240 248; do
  sed "1i #define K12_MAXNREG $w" "$d/k15_two_kernels.cu" > "$d/w.cu"
  for s in "396 3168 4096" "1980 7920 8192"; do
    set -- $s
    printf 'whole, K12_MAXNREG %s: ' $w
    python3 -m study.predict --cu "$d/w.cu" --symbol k15t_whole --grid $1,1 --block 256 --smem 98304 --shape $2,$3,$3
  done
done
for t in 0 240 248; do
  sed "1i #define K15T_TAIL_MAXNREG $t" "$d/k15_two_kernels.cu" > "$d/t.cu"
  for s in "928 4096" "272 8192"; do
    set -- $s
    printf 'tail, K15T_TAIL_MAXNREG %s: ' $t
    python3 -m study.predict --cu "$d/t.cu" --symbol k15t_tail --grid 132,1 --block 256 --smem 98304 --shape $1,$2,$2
  done
done
