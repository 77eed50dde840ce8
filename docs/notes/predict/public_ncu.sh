#!/usr/bin/env bash
# On the GPU, from the repository root: the counters of the kernels public_time.py times, one
# launch each (its check), read by ncu with the study's metrics (study.measure.profile.METRICS),
# the clocks left as they are. The CSV goes to $2.
#   bash docs/notes/predict/public_ncu.sh SGEMM_CUDA_CHECKOUT OUT.csv
set -euo pipefail
metrics=$(python3 -c "from study.measure.profile import METRICS; print(','.join(METRICS))")
ncu --clock-control none --csv --print-units base --metrics "$metrics" \
  --kernel-name "regex:^(sgemm|runSgemm)" \
  python3 "$(dirname "$0")/public_time.py" "$1" /dev/null 0 > "$2"
