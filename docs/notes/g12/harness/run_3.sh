#!/usr/bin/env bash
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; W=/tmp/s3; mkdir -p $OUT $W
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
pack() { tar czf $OUT/s3.tgz -C $W --exclude='*.ncu-rep' .; }
t0=$(date +%s)
timeout 420 python3 docs/notes/g12/harness/g12_sweep.py $W/sweep.jsonl > $W/sweep.log 2>&1
echo "sweep $(( $(date +%s)-t0 ))" >> $W/times.txt; pack
mkdir -p $W/cubins && find ~/.triton/cache -name 'g12_kernel.*' | while read f; do cp $f $W/cubins/$(basename $(dirname $f))_$(basename $f); done
pack; cat $W/times.txt; tail -5 $W/sweep.log
