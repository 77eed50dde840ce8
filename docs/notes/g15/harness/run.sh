#!/usr/bin/env bash
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" | tee $OUT/env.txt
bash docs/notes/g15/harness/make_variants.sh
python3 -c "import cuda_kernels; cuda_kernels.load()" > $OUT/build.log 2>&1; tail -2 $OUT/build.log
timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gluon.py > $OUT/gpu_tests.log 2>&1; tail -3 $OUT/gpu_tests.log
timeout 300 python3 docs/notes/g15/harness/probe.py $OUT/g15.jsonl > $OUT/probe.log 2>&1; tail -5 $OUT/probe.log | cut -c1-300
mkdir -p $OUT/cubins && find ~/.triton/cache -name 'g1[25]_kernel.cubin' | while read f; do cp $f $OUT/cubins/$(basename $(dirname $f))_$(basename $f); done
