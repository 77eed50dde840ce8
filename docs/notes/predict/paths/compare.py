"""The probe's rows (probe.sh, unpacked into DIR) beside the model: KD's issue rate at decode
shapes as ncu read it against what `--check` predicted before each warp played its own pass
(check_7b0b569) and after (check_410888f); the edge shapes' times against the model's.
Usage: python docs/notes/predict/paths/compare.py DIR"""

import csv
import re
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
LINE = re.compile(r"^(\S+) at (\d+)x(\d+)x(\d+): predicted ([\d.]+) ms, "
                  r"measured [\d.]+ \([^)]*\), issue ([\d.]+)%")


def predicted(name: str) -> dict:
    out = {}
    for line in (HERE / name).read_text().splitlines():
        m = LINE.match(line)
        if m:
            out[(m[1], int(m[2]), int(m[3]), int(m[4]))] = (float(m[5]), float(m[6]))
    return out


def main(root: Path) -> None:
    before = predicted("check_7b0b569_on_6bde200c0500.txt")
    after = predicted("check_410888f_on_6bde200c0500.txt")
    rows = list(csv.DictReader(open(root / "p" / "data" / "ncu.csv")))
    print("KD's issue %: ncu (first launch) | predicted before | after")
    for r in rows:
        if r["metric"] == "smsp__issue_active.avg.pct_of_peak_sustained_active" and r["launch"] == "0":
            key = (r["kernel"], int(r["M"]), int(r["N"]), int(r["K"]))
            b, a = before.get(key, (0, float("nan")))[1], after.get(key, (0, float("nan")))[1]
            print(f"  {key[1]}x{key[2]}x{key[3]}: {float(r['value']):.1f} | {b:.1f} | {a:.1f}  ({r['gpu']})")
    for d in sorted(root.glob("edge_*")):
        rows = list(csv.DictReader(open(d / "data" / "results.csv")))
        print(d.name, rows[0]["gpu"] if rows else "")
        for k in sorted({r["kernel"] for r in rows if r["ms"]}):
            ms = statistics.median(float(r["ms"]) for r in rows if r["kernel"] == k and r["ms"])
            r0 = rows[0]
            key = (k, int(r0["M"]), int(r0["N"]), int(r0["K"]))
            p = after.get(key)
            tail = f", model {p[0]:.4f} ({100 * (p[0] / ms - 1):+.1f}%)" if p else ""
            print(f"  {k}: {ms:.4f} ms{tail}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
