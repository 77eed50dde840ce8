#!/usr/bin/env bash
# From the repository root on the GPU machine: KD's GPU tests, the G12T probe, ncu per instruction.
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } > "$OUT/env.txt" 2>&1
t0=$(date +%s)
python3 -c "import cuda_kernels; cuda_kernels.load()" > "$OUT/build.log" 2>&1
echo "build $(( $(date +%s)-t0 ))" >> "$OUT/times.txt"
if [ -n "${TESTS_K:-}" ]; then
  t0=$(date +%s)
  timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider -k "$TESTS_K" tests > "$OUT/gpu_tests.log" 2>&1
  tail -4 "$OUT/gpu_tests.log"; echo "tests $(( $(date +%s)-t0 ))" >> "$OUT/times.txt"
fi
t0=$(date +%s)
timeout 330 python3 docs/notes/g12t/harness/probe.py "$OUT/g12t.jsonl" > "$OUT/probe.log" 2>&1
echo "probe $(( $(date +%s)-t0 ))" >> "$OUT/times.txt"
samp() {  # name, command...
  local n=$1; shift; local t0=$(date +%s)
  timeout 100 "$NCU" --clock-control none --profile-from-start off --section SourceCounters \
    --section WarpStateStats --warp-sampling-interval 0 -k regex:g12_kernel -o "$OUT/$n" "$@" > "$OUT/$n.log" 2>&1
  "$NCU" -i "$OUT/$n.ncu-rep" --page source --csv --print-source sass 2> "$OUT/${n}_source.err" | gzip > "$OUT/source_${n}.csv.gz"
  "$NCU" -i "$OUT/$n.ncu-rep" --page details --csv > "$OUT/${n}_details.csv" 2>&1
  rm -f "$OUT/$n.ncu-rep"; echo "$n $(( $(date +%s)-t0 ))" >> "$OUT/times.txt"
}
[ -z "${SKIP_NCU:-}" ] && samp G12T python3 docs/notes/g12t/harness/child.py G12T
cat "$OUT/times.txt"
