#!/usr/bin/env bash
# On a GPU machine, from the repository's root: KD's counters at decode shapes (the issue rate
# each warp's own pass predicts), and the edge shapes timed after the edge fixes (K12, K15, the
# Gluon tiles beside the vendor's kernels). Results under $OUT (default /tmp/out).
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/env.txt"
# nvmath-python for K0L (the best cuBLASLt algorithm), from wheels carried in .whl/, where they serve
if ls .whl/nvmath*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl > "$OUT/wheels.log" 2>&1 && export PYTHONPATH="/tmp/site:$PYTHONPATH"
fi
python3 -c "import cuda_kernels; cuda_kernels.load()" > "$OUT/build.log" 2>&1 || { tail -5 "$OUT/build.log"; exit 1; }
for s in 1,18944,3584 1,152064,3584 1,4096,4096 2,4096,4096 4,18944,3584; do
  python3 -m study.profile --out "$OUT/p" --kernels KD --shape "$s" >> "$OUT/profile.log" 2>&1
done
tail -3 "$OUT/profile.log"
for s in 4100,4100,4100 4097,4097,4097; do
  python3 -m study.run --kernels "${EDGE_KERNELS:-K0,K0L,K12,K15,G12,G12T,G15}" --experiments main \
    --shape "$s" --passes 1 --no-sass --no-report --out "$OUT/edge_${s//,/x}" >> "$OUT/edge.log" 2>&1
done
grep -i "error\|fail" "$OUT/edge.log" | head -5
tar czf "$OUT/probe.tgz" -C "$OUT" p edge_4100x4100x4100 edge_4097x4097x4097 2>/dev/null
