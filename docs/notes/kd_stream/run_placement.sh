#!/usr/bin/env bash
# On the GPU, from the repository root: placement.py in two processes, one after the other.
# Rows in $OUT/placement.jsonl (a "process" field tells the two apart).
set -uo pipefail
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_extensions
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; S=docs/notes/kd_stream
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > "$OUT/wheels.log" 2>&1
export PYTHONPATH="/tmp/site:$PYTHONPATH"  # nvmath-python, for K0L
for proc in 0 1; do
  python3 $S/placement.py "$OUT/placement_$proc.jsonl" >> "$OUT/placement.log" 2>&1
done
python3 - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
with (out / "placement.jsonl").open("w") as f:
    for proc in (0, 1):
        for line in (out / f"placement_{proc}.jsonl").open():
            f.write(json.dumps({**json.loads(line), "process": proc}) + "\n")
PY
