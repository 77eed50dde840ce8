#!/usr/bin/env bash
# Kernels the model has never seen: siboehm/SGEMM_CUDA's kernels 4-8 and 10 (a checkout given as
# $1; read at 60cba6f9b20a), each instantiated at the parameters its runner.cu launches at 4096^3
# and predicted by `python -m study.predict --cu` from its SASS and launch alone, before any of
# them has run on the H200. Its headers include cublas_v2.h and use nothing of it: where the CUDA
# here has no cuBLAS headers, an empty one stands in. Run from the repository's root:
#   bash docs/notes/predict/public.sh PATH/TO/SGEMM_CUDA [--gpu reports/data/gpu.json]
set -euo pipefail
src="$(cd "$1" && pwd)/src/kernels"
shift
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
: > "$d/cublas_v2.h"
args='(int, int, int, float, float *, float *, float, float *)'
cargs='(int, int, int, float, const float *, const float *, float, float *)'
# name, header, instantiation, grid at 4096^3, threads
while IFS='|' read -r name header inst grid block; do
  printf '#include "%s/%s"\ntemplate __global__ void %s;\n' "$src" "$header" "$inst" > "$d/$name.cu"
  printf '%s: ' "$name"
  python3 -m study.predict --cu "$d/$name.cu" --symbol "${inst%%<*}" --grid "$grid" --block "$block" \
    --smem 0 --shape 4096,4096,4096 "$@"
done <<LIST
4_1D_blocktiling|4_kernel_1D_blocktiling.cuh|sgemm1DBlocktiling<64, 64, 8, 8>$cargs|64,64|512
5_2D_blocktiling|5_kernel_2D_blocktiling.cuh|sgemm2DBlocktiling<128, 128, 8, 8, 8>$cargs|32,32|256
6_vectorize|6_kernel_vectorize.cuh|sgemmVectorize<128, 128, 8, 8, 8>$args|32,32|256
7_resolve_bank_conflicts|7_kernel_resolve_bank_conflicts.cuh|sgemmResolveBankConflicts<128, 128, 8, 8, 8>$args|32,32|256
8_bank_extra_col|8_kernel_bank_extra_col.cuh|sgemmResolveBankExtraCol<128, 128, 8, 8, 8>$args|32,32|256
10_warptiling|10_kernel_warptiling.cuh|sgemmWarptiling<128, 128, 16, 64, 64, 4, 8, 4, 128>$args|32,32|128
LIST
