#!/usr/bin/env bash
# From the repository root on the GPU machine: probe2, then ncu per instruction for G12T and K12.
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/g12t_w; mkdir -p $W
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } > "$W/env.txt" 2>&1
t0=$(date +%s)
python3 -c "import cuda_kernels; cuda_kernels.load()" > "$W/build.log" 2>&1
echo "build $(( $(date +%s)-t0 ))" >> "$W/times.txt"
t0=$(date +%s)
timeout 330 python3 docs/notes/g12t/harness/probe2.py "$W/g12t2.jsonl" > "$W/probe2.log" 2>&1
echo "probe2 $(( $(date +%s)-t0 ))" >> "$W/times.txt"
samp() {  # name, regex, command...
  local n=$1 k=$2; shift 2; local t0=$(date +%s)
  timeout 100 "$NCU" --clock-control none --profile-from-start off --section SourceCounters \
    --section WarpStateStats --section SpeedOfLight --section LaunchStats --warp-sampling-interval 0 -k "regex:$k" \
    -o "$W/$n" "$@" > "$W/$n.log" 2>&1
  "$NCU" -i "$W/$n.ncu-rep" --page source --csv --print-source sass 2> "$W/${n}_source.err" | gzip > "$W/source_${n}.csv.gz"
  "$NCU" -i "$W/$n.ncu-rep" --page details --csv > "$W/${n}_details.csv" 2>&1
  rm -f "$W/$n.ncu-rep"; echo "$n $(( $(date +%s)-t0 ))" >> "$W/times.txt"
}
samp G12T_v4 g12_kernel python3 docs/notes/g12t/harness/child.py G12T 4 0
samp K12 k12 python3 docs/notes/g12t/harness/child.py K12
cat "$W/times.txt"
tar czf "$OUT/g12t2.tgz" -C $W .
