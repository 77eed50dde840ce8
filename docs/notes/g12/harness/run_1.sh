#!/usr/bin/env bash
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_extensions
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
$NCU --version > $OUT/ncu_version.txt 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/env.txt
t0=$(date +%s)
python3 -c "import cuda_kernels; cuda_kernels.load()" > $OUT/build.log 2>&1
echo "build $(( $(date +%s)-t0 ))" >> $OUT/times.txt
t0=$(date +%s)
timeout 200 python3 docs/notes/g12/harness/g12_time.py $OUT/g12_time.jsonl > $OUT/g12_time.log 2>&1
echo "g12_time $(( $(date +%s)-t0 ))" >> $OUT/times.txt
samp() {  # name, command...
  local n=$1; shift; local t0=$(date +%s)
  timeout 120 $NCU --clock-control none --profile-from-start off --section SourceCounters --section WarpStateStats \
    --warp-sampling-interval 0 -o $OUT/$n "$@" > $OUT/$n.log 2>&1
  $NCU -i $OUT/$n.ncu-rep --page source --csv --print-source sass > $OUT/${n}_source.csv 2> $OUT/${n}_source.err
  $NCU -i $OUT/$n.ncu-rep --page details --csv > $OUT/${n}_details.csv 2>&1
  echo "$n $(( $(date +%s)-t0 ))" >> $OUT/times.txt
}
samp K12_255 python3 docs/notes/g12/harness/k_child.py docs/notes/g12/harness/cubins/K12_255.cubin k12_lean_issue 98304
samp G12_plain python3 docs/notes/g12/harness/g12_child.py 0
samp K12_232 python3 docs/notes/g12/harness/k_child.py docs/notes/g12/harness/cubins/K12_232.cubin k12_lean_issue 98304
samp G12_ahead python3 docs/notes/g12/harness/g12_child.py 1
mkdir -p $OUT/cubins && find ~/.triton/cache -name '*.cubin' -exec cp {} $OUT/cubins/ \; 2>/dev/null
for f in $(find ~/.triton/cache -name '*.json'); do cp $f $OUT/cubins/$(basename $(dirname $f))_$(basename $f); done
samp K15 python3 -m study.profile --child K15 --shape 4096,4096,4096
timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gluon.py -k "g12" > $OUT/gpu_tests.log 2>&1; tail -3 $OUT/gpu_tests.log
ls -la $OUT | head -60
