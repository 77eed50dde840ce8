"""K12 at 4096^3 and 4097^3 per instruction, both read on H100s: each main-loop copy's shared
wavefronts and L2 sectors per warp instruction beside the model's L1 cycles for it, and the
share of the warps' stall samples by reason. No GPU (nvcc and cuobjdump for the model's side).

    python docs/notes/predict/offshape/k12_4097.py
"""
import csv
import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
HERE = Path(__file__).parent
SAMPLES = "Warp Stall Sampling (All Samples)"


def num(v) -> float:
    try:
        return float(str(v).replace(",", ""))
    except ValueError:
        return 0.0


def rows(name: str, m: str) -> list[dict]:
    with gzip.open(HERE / name, "rt") as f:
        return [x for x in csv.DictReader(f) if x["kernel"] == "K12" and x["M"] == m]


def main() -> None:
    from study.predict.__main__ import registered

    at = {4096: rows("source_k13_k12_32878a0.csv.gz", "4096"),
          4097: rows("source_decode_2085628.csv.gz", "4097")}
    model = {n: registered("K12", (n, n, n), "sm_90", sms=132)[0] for n in at}
    copies = {n: [x for x in r if "LDGSTS" in x["Source"] and num(x["Instructions Executed"]) > 1e6]
              for n, r in at.items()}
    played = {n: [c for i, c in zip(*model[n]) if i.base == "LDGSTS"] for n in at}
    print(f"{'copy':38} wavefronts 4096 4097   L2 sectors 4096 4097   model 4096 4097")
    for a, b, m6, m7 in zip(copies[4096], copies[4097], played[4096], played[4097]):
        per = [num(x[k]) / num(x["Instructions Executed"]) for x in (a, b)
               for k in ("L1 Wavefronts Shared", "L2 Theoretical Sectors Global")]
        print(f"{a['Source'].strip()[:38]:38} {per[0]:15.2f} {per[2]:4.2f} {per[1]:17.2f} {per[3]:4.2f} "
              f"{int(m6):12} {int(m7):4}")
    for n, r in at.items():
        total = sum(num(x[SAMPLES]) for x in r)
        share = {k[6:]: sum(num(x[k]) for x in r) / total for k in r[0]
                 if k.startswith("stall_") and "Not Issued" not in k}
        top = sorted(share.items(), key=lambda kv: -kv[1])[:10]
        print(f"{n}^3:", ", ".join(f"{k} {v:.3f}" for k, v in top))


if __name__ == "__main__":
    main()
