#!/usr/bin/env bash
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
bash docs/notes/g15/harness/make_variants.sh
python3 -c "import cuda_kernels; cuda_kernels.load()" > $OUT/build.log 2>&1; tail -1 $OUT/build.log
timeout 330 python3 docs/notes/g15/harness/probe2.py $OUT/g15_parts.jsonl > $OUT/probe2.log 2>&1; grep -c '"ms"' $OUT/g15_parts.jsonl; grep summary $OUT/g15_parts.jsonl | cut -c1-600
timeout 150 python3 -m study.profile --source --kernels G15 --out $OUT/prof > $OUT/prof.log 2>&1; tail -3 $OUT/prof.log
