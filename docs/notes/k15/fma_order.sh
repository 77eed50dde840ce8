#!/usr/bin/env bash
# The order of a k-step's FFMAs in K12's tile (K12_FMA_ORDER: 0 row by row, the default; 1 column
# by column; 2 and 3 the same turning back at each end), predicted before it runs: for K15 and K12
# at each order, the SASS against the default's, the reuse flags of the FFMAs, the registers, and
# study.predict's time at 4096^3 from the SASS and the launch (grid 16 x 32, 256 threads, 96 KiB of
# shared memory). No GPU. From the repository's root:
#   bash docs/notes/k15/fma_order.sh [study.predict options, e.g. --gpu GPU.json]
set -euo pipefail
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
for k in k15_wide_copies k12_lean_issue; do
  for o in 0 1 2 3; do
    printf '#define K12_FMA_ORDER %s\n#include "%s/cuda_kernels/%s.cu"\n' "$o" "$PWD" "$k" > "$d/$k$o.cu"
    nvcc -O3 -std=c++17 -arch=sm_90 -cubin -Icuda_kernels -o "$d/$k$o.cubin" "$d/$k$o.cu"
    cuobjdump -sass "$d/$k$o.cubin" 2>/dev/null | grep -v '^\s*$' > "$d/$k$o.sass"
    if cmp -s "$d/${k}0.sass" "$d/$k$o.sass"; then same="the default's SASS"; else
      same="$(diff "$d/${k}0.sass" "$d/$k$o.sass" | grep -c '^<' || true) lines of SASS differ"; fi
    echo "$k order $o: $same; $(grep FFMA "$d/$k$o.sass" | grep -o '\.reuse' | wc -l) reuse flags;" \
      "$(cuobjdump -res-usage "$d/$k$o.cubin" 2>/dev/null | grep -o 'REG:[0-9]*' | head -1)"
    python3 -m study.predict --cu "$d/$k$o.cu" --symbol "$k" --grid 16,32 --block 256 --smem 98304 \
      --shape 4096,4096,4096 "$@"
  done
done
