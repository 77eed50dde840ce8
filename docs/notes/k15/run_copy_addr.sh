#!/usr/bin/env bash
# On the GPU machine, from the repository's root: K15's copies of A and their addresses searched
# beside cuBLAS (python -m study.sweep_cuda --kernel K15 --only A_KL,COPY_ADDR,PAD,MAXNREG) at
# 4096^3, 2048^3 and 8192^3, in that order (the variants' cubins are compiled once and cached);
# each shape's sweep in $OUT/sweep_<M>, its log beside. SHAPES and BUDGET_S (per shape) choose.
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/env.txt"
for s in ${SHAPES:-4096,4096,4096 2048,2048,2048 8192,8192,8192}; do
  m=${s%%,*}
  t0=$(date +%s)
  python3 -m study.sweep_cuda --kernel K15 --only A_KL,COPY_ADDR,PAD,MAXNREG --shape "$s" --top 6 \
    --target-s 0.15 --budget-s "${BUDGET_S:-150}" --out "$OUT/sweep_$m" > "$OUT/sweep_$m.log" 2>&1 \
    || echo "sweep $s failed"
  echo "$s: $(( $(date +%s) - t0 )) s"
  tr "\r" "\n" < "$OUT/sweep_$m.log" | grep -v '^\s*$' | tail -8
done
