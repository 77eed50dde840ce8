#!/usr/bin/env bash
# On the GPU machine, from the repository's root: the GPU tests of K12 and K15, then K0, K0L, K12
# and K15 as the tree has them, timed by the study (python -m study.run, main experiment) at
# 2048^3, 4096^3 and 8192^3 in PASSES passes (default 3), and each pass's best vendor time over
# K12's and K15's (summary.txt). Results under $OUT.
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/ext_passes
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
if ls .whl/*.whl > /dev/null 2>&1 && python3 -m pip install -q --no-index --no-deps --target /tmp/site \
    .whl/*.whl > "$OUT/wheels.log" 2>&1; then export PYTHONPATH="/tmp/site:$PYTHONPATH"; fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/env.txt"
python3 -c "import cuda_kernels; cuda_kernels.load()" > "$OUT/build.log" 2>&1 || tail -5 "$OUT/build.log"
python3 -m pytest -q -m gpu -p no:cacheprovider -k "K12 or K15" tests/test_gpu_kernels.py > "$OUT/gpu_tests.log" 2>&1
tail -2 "$OUT/gpu_tests.log"
for s in 4096,4096,4096 2048,2048,2048 8192,8192,8192; do
  python3 -m study.run --kernels K0,K0L,K12,K15 --shape "$s" --experiments main --no-sass --no-report \
    --passes "${PASSES:-3}" --target-s 0.3 --out "/tmp/r_$s" > "$OUT/run_${s//,/x}.log" 2>&1 \
    || { echo "run $s failed"; tail -5 "$OUT/run_${s//,/x}.log"; }
  cp "/tmp/r_$s/data/results.csv" "$OUT/results_${s//,/x}.csv" 2>/dev/null
done
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import csv, glob, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "results_*.csv"))):
    rows = [r for r in csv.DictReader(open(f)) if r["experiment"] == "main"]
    by = {}
    for r in rows:
        by.setdefault(r["pass"], {})[r["kernel"]] = float(r["ms"])
    for p, t in sorted(by.items()):
        vendor = min(t[k] for k in ("K0", "K0L") if k in t)
        print(rows[0]["M"], rows[0]["gpu"], "pass", p, " ".join(f"{k} {v:.4f}" for k, v in sorted(t.items())),
              " ".join(f"{k}/vendor {100 * vendor / t[k]:.1f}%" for k in ("K12", "K15") if k in t))
PY
