#!/usr/bin/env bash
# The k15_slabs probe (a CUDA kernel with G15's layout of A) checked and timed beside K12, K15 and
# G15, and the per-instruction source pages of k15_slabs and G15 kept whole (not summed per opcode);
# also the GPU tests of G15. From the repository root; results under $OUT.
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; W=$OUT/slab; mkdir -p $W
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
python3 -c "import cuda_kernels; cuda_kernels.load()" > $W/build.log 2>&1; tail -1 $W/build.log
nvcc -cubin -O3 -std=c++17 -arch=sm_90 -I cuda_kernels -o $W/k15_slabs.cubin docs/notes/g15/harness/k15_slabs.cu > $W/nvcc.log 2>&1; tail -2 $W/nvcc.log
[ -n "${SKIP_TESTS:-}" ] || timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gluon.py -k "g15 or G15" > $W/gpu_tests.log 2>&1; tail -2 $W/gpu_tests.log
timeout 120 python3 docs/notes/g15/harness/slab_child.py $W/k15_slabs.cubin $W/slabs.jsonl > $W/slabs.log 2>&1; tail -4 $W/slabs.log | cut -c1-200
SRC="--section SourceCounters --section WarpStateStats --warp-sampling-interval 0"
timeout 100 $NCU --clock-control none --profile-from-start off $SRC -o $W/slabs python3 docs/notes/g15/harness/slab_child.py $W/k15_slabs.cubin --profile > $W/ncu_slabs.log 2>&1
$NCU -i $W/slabs.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $W/source_k15_slabs.csv.gz
[ -n "${SKIP_G15:-}" ] || timeout 120 $NCU --clock-control none --profile-from-start off $SRC -o $W/g15 python3 -m study.profile --child G15 --shape 4096,4096,4096 > $W/ncu_g15.log 2>&1
$NCU -i $W/g15.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $W/source_G15.csv.gz
rm -f $W/*.ncu-rep; ls -la $W
