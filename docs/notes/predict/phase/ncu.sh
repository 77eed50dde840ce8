#!/usr/bin/env bash
# On the GPU, from the repository root: study.profile's counters of chosen rungs at chosen
# residencies (phase.py --once: the launch after the checked one), into $OUT/ncu_phase.csv with a
# "case" column KID:RESIDENCY. Read them with study.measure.profile.parse_ncu_csv.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH="$PWD"
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
METRICS=$(python3 -c "from study.measure.profile import METRICS; print(','.join(METRICS))")
for case in ${CASES:-K3:1 K3:2 K4:1 K4:9 K5:1 K5:8 K7:1 K7:2 K9:1 K9:2}; do
  kid=${case%:*}; res=${case#*:}
  timeout 240 "$NCU" --clock-control none --csv --metrics "$METRICS" --kernel-name regex:'^k[0-9]' \
    --launch-skip 1 --launch-count 1 python3 docs/notes/predict/phase/phase.py --once "$kid" "$res" \
    > "$OUT/ncu_$kid.$res.txt" 2> "$OUT/ncu_$kid.$res.err"
  rc=$?; echo "$case: rc $rc $(grep -c '"' "$OUT/ncu_$kid.$res.txt") lines"
  [ $rc -eq 0 ] || head -5 "$OUT/ncu_$kid.$res.err"
  rm -f "$OUT/ncu_$kid.$res.err"
done
python3 - "$OUT" <<'PY'
import csv, sys
from pathlib import Path
from study.measure.profile import parse_ncu_csv
out = Path(sys.argv[1])
rows = []
for f in sorted(out.glob("ncu_*.txt")):
    case = f.name[4:-4].replace(".", ":")
    rows += [{"case": case, **r} for r in parse_ncu_csv(f.read_text())]
with open(out / "ncu_phase.csv", "w", newline="") as fh:
    w = csv.DictWriter(fh, fieldnames=["case", "launch", "ncu_kernel", "metric", "unit", "value"])
    w.writeheader()
    w.writerows(rows)
print(len(rows), "rows")
PY
rm -f "$OUT"/ncu_*.txt
