#!/usr/bin/env bash
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; W=/tmp/s4; mkdir -p $OUT $W
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
pack() { tar czf $OUT/s4.tgz -C $W --exclude='*.ncu-rep' .; }
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" > $W/env.txt
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gluon.py > $W/gpu_tests.log 2>&1; tail -3 $W/gpu_tests.log; pack
timeout 150 python3 docs/notes/g12/harness/g12_final.py $W/final.jsonl > $W/final.log 2>&1; pack
timeout 100 $NCU --clock-control none --profile-from-start off --section SourceCounters --section WarpStateStats \
  --warp-sampling-interval 0 -o $W/G12_kept python3 -m study.profile --child G12 --shape 4096,4096,4096 > $W/G12_kept.log 2>&1
$NCU -i $W/G12_kept.ncu-rep --page source --csv --print-source sass > $W/G12_kept_source.csv 2>&1
mkdir -p $W/cubins && find ~/.triton/cache -name 'g12_kernel.cubin' | while read f; do cp $f $W/cubins/$(basename $(dirname $f))_$(basename $f); done
pack; cat $W/final.log | cut -c1-150
