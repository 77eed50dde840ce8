#!/usr/bin/env bash
# K15's copy variants predicted before they run: every variant of `study.sweep_cuda --kernel K15
# --only $ONLY` (default A_KL,COPY_ADDR,PAD,MAXNREG: A's copies and their addresses; B_RUN,MAXNREG:
# B's copies along a row), compiled as the sweep compiles it, with its main loop's length, its
# registers and the nearest use of a shared load's registers (loop_stats.py), and study.predict's
# time at 4096^3 from the SASS and the launch (grid 16 x 32, 256 threads, 96 KiB). No GPU. From the
# repository's root: [ONLY=P,Q,...] bash docs/notes/k15/copy_addr.sh [study.predict options] > FILE
set -euo pipefail
ONLY="${ONLY:-A_KL,COPY_ADDR,PAD,MAXNREG}"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
python3 - "$ONLY" > "$d/variants" <<'PY'
import sys
from study import kernels
from study.measure import sweep_cuda
names = sys.argv[1].split(",")
for v in sweep_cuda.space(kernels.get("K15"), smem_limit=227 * 1024, only=tuple(names)):
    print(" ".join(str(v[p]) for p in names))
PY
echo "${ONLY//,/ } | loop instructions, registers, nearest use of a shared load | prediction"
IFS=, read -r -a names <<< "$ONLY"
while read -r -a values; do
  f="$d/v_$(IFS=_; echo "${values[*]}")"
  for i in "${!names[@]}"; do echo "#define K12_${names[$i]} ${values[$i]}"; done > "$f.cu"
  echo "#include \"$PWD/cuda_kernels/k15_wide_copies.cu\"" >> "$f.cu"
  nvcc -O3 -std=c++17 -arch=sm_90 -cubin -Icuda_kernels -o "$f.cubin" "$f.cu" 2> /dev/null
  echo "${values[*]} | $(python3 docs/notes/k15/loop_stats.py "$f.cubin") |" \
    "$(python3 -m study.predict --cu "$f.cu" --symbol k15 --grid 16,32 --block 256 --smem 98304 --shape 4096,4096,4096 "$@")"
done < "$d/variants"
