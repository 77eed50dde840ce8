#!/usr/bin/env bash
# K15's copies of B along one row (K12_B_RUN, with K12_MAXNREG), predicted before they run: every
# variant of `study.sweep_cuda --kernel K15 --only B_RUN,MAXNREG`, compiled as the sweep compiles it,
# with its main loop's length, registers and nearest use of a shared load (loop_stats.py), and
# study.predict's time at 4096^3 from the SASS and the launch (grid 16 x 32, 256 threads, 96 KiB).
# No GPU. From the repository's root: bash docs/notes/k15/b_run.sh [study.predict options] > FILE
set -euo pipefail
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
python3 - > "$d/variants" <<'PY'
from study import kernels
from study.measure import sweep_cuda
for v in sweep_cuda.space(kernels.get("K15"), smem_limit=227 * 1024, only=("B_RUN", "MAXNREG")):
    print(v["B_RUN"], v["MAXNREG"])
PY
echo "B_RUN MAXNREG | loop instructions, registers, nearest use of a shared load | prediction"
while read -r run w; do
  f="$d/v_${run}_$w"
  printf '#define K12_B_RUN %s\n#define K12_MAXNREG %s\n#include "%s/cuda_kernels/k15_wide_copies.cu"\n' \
    "$run" "$w" "$PWD" > "$f.cu"
  nvcc -O3 -std=c++17 -arch=sm_90 -cubin -Icuda_kernels -o "$f.cubin" "$f.cu" 2> /dev/null
  echo "$run $w | $(python3 docs/notes/k15/loop_stats.py "$f.cubin") |" \
    "$(python3 -m study.predict --cu "$f.cu" --symbol k15 --grid 16,32 --block 256 --smem 98304 --shape 4096,4096,4096 "$@")"
done < "$d/variants"
