#!/usr/bin/env bash
# On the GPU machine, from the repository's root: K15's copies of A and their addresses searched
# beside cuBLAS (python -m study.sweep_cuda --kernel K15 --only A_KL,COPY_ADDR,PAD,MAXNREG) at
# 4096^3; then the variant that round 2 timed fastest there, defined at the top of k15_wide_copies.cu
# (k15_defines.patch), goes through docs/notes/predict/offshape/edge/wrap.sh: K15 as the
# tree has it and as patched, at 2048^3, 4096^3 and 8192^3 beside K0 and K0L, the GPU tests of K15
# in between. ONLY names the parameters searched (default A_KL,COPY_ADDR,PAD,MAXNREG; e.g.
# B_RUN,MAXNREG); SWEEP_SHAPES adds sweeps at other shapes after that (e.g. "2048,2048,2048");
# BUDGET_S the seconds each sweep may start work in. Results under $OUT.
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
ONLY="${ONLY:-A_KL,COPY_ADDR,PAD,MAXNREG}"
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/env.txt"
sweep() {  # $1: M,N,K
  local m=${1%%,*} t0=$(date +%s)
  python3 -m study.sweep_cuda --kernel K15 --only "$ONLY" --shape "$1" --top 6 \
    --target-s 0.15 --budget-s "${BUDGET_S:-150}" --out "$OUT/sweep_$m" > "$OUT/sweep_$m.log" 2>&1 \
    || echo "sweep $1 failed"
  echo "sweep $1: $(( $(date +%s) - t0 )) s"
  tr "\r" "\n" < "$OUT/sweep_$m.log" | grep -v '^\s*$' | tail -8
}
sweep 4096,4096,4096
# the fastest variant of round 2 at 4096^3, as -D values; nothing where it is the file's own (the
# sweep's first row)
best=$(python3 - "$OUT/sweep_4096/data/sweep_cuda.csv" "$ONLY" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["status"] == "ok"]
names = sys.argv[2].split(",")
own = next(r for r in rows if r["round"] == "1")
b = min((r for r in rows if r["round"] == "2"), key=lambda r: float(r["ms"]))
if any(b[p] != own[p] for p in names):
    print(" ".join(f"{p}={b[p]}" for p in names))
PY
)
echo "fastest in round 2 at 4096^3: ${best:-as the file has it}" | tee "$OUT/best.txt"
if [ -n "$best" ]; then
  cp cuda_kernels/k15_wide_copies.cu /tmp/k15.orig
  for kv in $best; do
    sed -i "1i #define K12_${kv%%=*} ${kv#*=}" cuda_kernels/k15_wide_copies.cu  # before the file's own
  done
  diff -u --label a/cuda_kernels/k15_wide_copies.cu --label b/cuda_kernels/k15_wide_copies.cu \
    /tmp/k15.orig cuda_kernels/k15_wide_copies.cu > "$OUT/k15_defines.patch"
  cp /tmp/k15.orig cuda_kernels/k15_wide_copies.cu
  PATCH="$OUT/k15_defines.patch" SHAPES="4096,4096,4096 2048,2048,2048 8192,8192,8192" \
    BASE_KERNELS=K0,K0L,K15 WRAP_KERNELS=K0,K0L,K15 TESTS_K="K15" \
    OUT="$OUT/wrap" bash docs/notes/predict/offshape/edge/wrap.sh
fi
for s in ${SWEEP_SHAPES:-}; do sweep "$s"; done
