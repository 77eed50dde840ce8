#!/usr/bin/env bash
# Kernels the model has never seen: siboehm/SGEMM_CUDA's kernels 4-8 and 10 (a checkout given as
# $1; read at 60cba6f9b20a), each instantiated at the parameters its runner.cu launches at 4096^3
# (public_kernels.txt) and predicted by `python -m study.predict --cu` from its SASS and launch
# alone. Its headers include cublas_v2.h and use nothing of it: where the CUDA here has no cuBLAS
# headers, an empty one stands in. public_time.py times the same instantiations on a GPU. Run
# from the repository's root:
#   bash docs/notes/predict/public.sh PATH/TO/SGEMM_CUDA [--gpu reports/data/gpu.json]
set -euo pipefail
src="$(cd "$1" && pwd)/src/kernels"
shift
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
: > "$d/cublas_v2.h"
grep -v '^#' "$(dirname "$0")/public_kernels.txt" | while IFS='|' read -r name header inst grid block; do
  for h in ${header//+/ }; do printf '#include "%s/%s"\n' "$src" "$h"; done > "$d/$name.cu"
  case "$inst" in *'<'*) printf 'template __global__ void %s;\n' "$inst" >> "$d/$name.cu" ;; esac
  printf '%s: ' "$name"
  threads=1
  for x in ${block//,/ }; do threads=$((threads * x)); done
  symbol=$(printf '%s' "$inst" | sed 's/[<(].*//')
  python3 -m study.predict --cu "$d/$name.cu" --symbol "$symbol" --grid "$grid" --block "$threads" \
    --smem 0 --shape 4096,4096,4096 "$@" < /dev/null
done
