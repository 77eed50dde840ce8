#!/usr/bin/env bash
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_extensions
OUT=${OUT:-/tmp/out}; W=/tmp/s2; mkdir -p $OUT $W
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
t0=$(date +%s)
python3 -c "import cuda_kernels; cuda_kernels.load()" > $W/build.log 2>&1
echo "build $(( $(date +%s)-t0 ))" >> $W/times.txt
samp() {
  local n=$1; shift; local t0=$(date +%s)
  timeout 120 $NCU --clock-control none --profile-from-start off --section SourceCounters --section WarpStateStats \
    --warp-sampling-interval 0 -o $W/$n "$@" > $W/$n.log 2>&1
  $NCU -i $W/$n.ncu-rep --page source --csv --print-source sass > $W/${n}_source.csv 2> $W/${n}_source.err
  $NCU -i $W/$n.ncu-rep --page details --csv > $W/${n}_details.csv 2>&1
  rm -f $W/$n.ncu-rep
  echo "$n $(( $(date +%s)-t0 ))" >> $W/times.txt
  tar czf $OUT/s2.tgz -C $W --exclude='*.ncu-rep' .
}
samp K12_255 python3 docs/notes/g12/harness/k_child.py docs/notes/g12/harness/cubins/K12_255.cubin k12_lean_issue 98304
samp K12_232 python3 docs/notes/g12/harness/k_child.py docs/notes/g12/harness/cubins/K12_232.cubin k12_lean_issue 98304
samp G12_plain python3 docs/notes/g12/harness/g12_child.py 0
samp G12_old python3 docs/notes/g12/harness/g12_old_child.py
samp K15 python3 -m study.profile --child K15 --shape 4096,4096,4096
samp K14 python3 -m study.profile --child K14 --shape 4096,4096,4096
mkdir -p $W/cubins && find ~/.triton/cache -name 'g12_kernel.*' | while read f; do cp $f $W/cubins/$(basename $(dirname $f))_$(basename $f); done
tar czf $OUT/s2.tgz -C $W --exclude='*.ncu-rep' .
cat $W/times.txt; ls -la $OUT
