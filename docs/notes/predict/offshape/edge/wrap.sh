#!/usr/bin/env bash
# K12 and K15 before and after a patch on their tile, on one machine: the kernels built from the
# tree as it is, timed at whole and edge shapes; then the patch applied (to the copy of the tree on
# the GPU machine), the GPU tests of K12 and K15, and the same timings with cuBLAS beside them
# (BASE_KERNELS, WRAP_KERNELS, SHAPES and TESTS_K, the tests' -k, choose). It ran at aa75ed2 with PATCH =
# docs/notes/predict/k12_edge_wrap.patch, the change of the commit after (`git show` it there).
# Usage, on the GPU machine from the repo root: PATCH=FILE bash docs/notes/predict/offshape/edge/wrap.sh
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
SHAPES="${SHAPES:-4096,4096,4096 4096,4097,4096 4096,4100,4096 4097,4097,4097 4100,4100,4100}"
# nvmath-python for K0L, from the wheels carried in .whl/ (as .ci/gpu-session installs them)
if ls .whl/*.whl > /dev/null 2>&1 && python3 -m pip install -q --no-index --no-deps --target /tmp/site \
    .whl/*.whl > "$OUT/wheels.log" 2>&1; then export PYTHONPATH="/tmp/site:$PYTHONPATH"; fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/env.txt"
time_all() {  # $1: tag, $2: kernels
  for s in $SHAPES; do
    local ks="$2"
    # the kernels that need N and K multiples of 4 (VEC4) left out where the shape is not
    if [[ "$s" == *4097* ]]; then for v in ${VEC4:-K15 G15}; do ks=$(echo ",$ks," | sed "s/,$v,/,/; s/^,//; s/,$//"); done; fi
    python3 -m study.run --kernels "$ks" --shape "$s" --experiments main --no-sass --no-report \
      --passes 2 --target-s 0.3 --out "/tmp/r_$1_$s" > "$OUT/run_$1_${s//,/x}.log" 2>&1 \
      || { echo "run $1 $s failed"; tail -5 "$OUT/run_$1_${s//,/x}.log"; }
    cp "/tmp/r_$1_$s/data/results.csv" "$OUT/results_$1_${s//,/x}.csv" 2>/dev/null
  done
}
t0=$(date +%s)
TORCH_EXTENSIONS_DIR=/tmp/ext_base python3 -c "import cuda_kernels; cuda_kernels.load()" > "$OUT/build_base.log" 2>&1
TORCH_EXTENSIONS_DIR=/tmp/ext_base time_all base "${BASE_KERNELS:-K12,K15}"
echo "base: $(( $(date +%s) - t0 )) s"
git apply "${PATCH:-docs/notes/predict/k12_edge_wrap.patch}" || { echo "patch does not apply"; exit 1; }
t0=$(date +%s)
export TORCH_EXTENSIONS_DIR=/tmp/ext_wrap
python3 -c "import cuda_kernels; cuda_kernels.load()" > "$OUT/build_wrap.log" 2>&1
python3 -m pytest -q -m gpu -p no:cacheprovider -k "${TESTS_K:-K12 or K15}" tests/test_gpu_kernels.py > "$OUT/gpu_tests.log" 2>&1
tail -3 "$OUT/gpu_tests.log"
time_all wrap "${WRAP_KERNELS:-K0,K0L,K12,K15}"
echo "wrap: $(( $(date +%s) - t0 )) s"
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import csv, glob, os, statistics, sys
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "results_*.csv"))):
    tag = os.path.basename(f).split("_")[1]
    for r in csv.DictReader(open(f)):
        if r["experiment"] == "main":
            rows.setdefault((r["M"], r["N"], r["K"], tag, r["kernel"]), []).append(float(r["ms"]))
for k in sorted(rows):
    print(*k, " ".join(f"{v:.4f}" for v in rows[k]), f"median {statistics.median(rows[k]):.4f}")
PY
tar czf "$OUT/logs.tgz" -C "$OUT" --remove-files $(cd "$OUT" && ls *.log *.csv)
