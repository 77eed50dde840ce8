#!/usr/bin/env bash
# K15's copies of A and their addresses (K12_A_KL, K12_COPY_ADDR, with K12_PAD and K12_MAXNREG),
# predicted before they run: every variant of `study.sweep_cuda --kernel K15 --only
# A_KL,COPY_ADDR,PAD,MAXNREG`, compiled as the sweep compiles it, with its main loop's length, its
# registers, the nearest use of a shared load's registers (instructions after it) and study.predict's
# time at 4096^3 from the SASS and the launch (grid 16 x 32, 256 threads, 96 KiB). No GPU. From the
# repository's root: bash docs/notes/k15/copy_addr.sh [study.predict options] > FILE
set -euo pipefail
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
python3 - > "$d/variants" <<'PY'
from study import kernels
from study.measure import sweep_cuda
k15 = next(k for k in kernels.KERNELS if k.id == "K15")
for v in sweep_cuda.space(k15, smem_limit=227 * 1024, only=("A_KL", "COPY_ADDR", "PAD", "MAXNREG")):
    print(v["A_KL"], v["COPY_ADDR"], v["PAD"], v["MAXNREG"])
PY
echo "A_KL COPY_ADDR PAD MAXNREG | loop instructions, registers, nearest use of a shared load | prediction"
while read -r kl ca pad w; do
  f="$d/v_${kl}_${ca}_${pad}_$w"
  printf '#define K12_A_KL %s\n#define K12_COPY_ADDR %s\n#define K12_PAD %s\n#define K12_MAXNREG %s\n#include "%s/cuda_kernels/k15_wide_copies.cu"\n' \
    "$kl" "$ca" "$pad" "$w" "$PWD" > "$f.cu"
  nvcc -O3 -std=c++17 -arch=sm_90 -cubin -Icuda_kernels -o "$f.cubin" "$f.cu" 2> /dev/null
  echo "$kl $ca $pad $w | $(python3 docs/notes/k15/loop_stats.py "$f.cubin") |" \
    "$(python3 -m study.predict --cu "$f.cu" --symbol k15 --grid 16,32 --block 256 --smem 98304 --shape 4096,4096,4096 "$@")"
done < "$d/variants"
