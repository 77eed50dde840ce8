"""Read ncu's per-instruction page (``ncu -i R.ncu-rep --page source --csv --print-source sass``) of
one kernel and print where its warps' stall samples fall: by reason, the shared-memory wavefronts
of its loads and copies per FFMA, and for the short-scoreboard samples (a warp waiting on a
shared load's result) how far the instruction that waits is from the load it waits on, and in
which 1/16th of the main loop it is.

    python docs/notes/g12/samples.py NAME=FILE [NAME=FILE ...]

FILE is the page as ncu prints it or its columns kept in ``data/source_NAME.csv.gz``.

The main loop is the instructions executed at least half as often as the most executed one. The
distance is in instructions, the loop read twice so that a load late in one pass counts for its
use early in the next; a wait with no load behind it counts as "none".
"""

import csv
import gzip
import re
import sys
from collections import Counter

REG = re.compile(r"\bR(\d+)\b")
BUCKETS = ((8, "<=8"), (16, "9-16"), (32, "17-32"), (64, "33-64"), (1 << 30, ">64"))


def read(path):
    """The rows of ncu's page, or of its columns kept in data/ (gzipped)."""
    gz = str(path).endswith(".gz")
    with (gzip.open(path, "rt", errors="replace") if gz else open(path, errors="replace")) as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip('"').startswith("Address"))
    return list(csv.DictReader(lines[start:]))


def num(x):
    try:
        return float(str(x).replace(",", ""))
    except ValueError:
        return 0.0


def opcode(text):
    parts = text.split()
    if not parts:
        return ""
    return parts[1] if parts[0].startswith("@") and len(parts) > 1 else parts[0]


def summary(rows):
    reasons = [k for k in rows[0] if k.startswith("stall_") and "Not Issued" not in k]
    total = Counter()
    for r in rows:
        for k in reasons:
            total[k[6:]] += num(r[k])
    samples = sum(total.values())
    ffma = sum(num(r["Instructions Executed"]) for r in rows if opcode(r["Source"]) == "FFMA")
    lds = sum(num(r["L1 Wavefronts Shared"]) for r in rows if opcode(r["Source"]).startswith("LDS"))
    copies = sum(num(r["L1 Wavefronts Shared"]) for r in rows if opcode(r["Source"]).startswith("LDGSTS"))
    return {k: v / samples for k, v in total.most_common()}, lds / ffma, copies / ffma


def short_sb(rows):
    executed = [num(r["Instructions Executed"]) for r in rows]
    hot = [i for i, e in enumerate(executed) if e > 0.5 * max(executed)]
    body = rows[hot[0]:hot[-1] + 1]
    pending, by_distance, by_part = {}, Counter(), Counter()
    for rep in range(2):
        for j, r in enumerate(body):
            text = r["Source"].strip()
            op = opcode(text)
            regs = REG.findall(text.split(" ", 1)[1] if " " in text else "")
            if rep == 1 and num(r["stall_short_sb"]):
                v = num(r["stall_short_sb"])
                d = [(j - pending[x]) % len(body) for x in regs[1:] if x in pending]
                by_distance[next(n for lim, n in BUCKETS if min(d) <= lim) if d else "none"] += v
                by_part[16 * j // len(body)] += v
            if op.startswith("LDS") and regs:
                width = 4 if ".128" in op else 2 if ".64" in op else 1
                for q in range(width):
                    pending[str(int(regs[0]) + q)] = j
            elif regs and not op.startswith(("ST", "LDGSTS", "BAR", "BRA", "DEPBAR", "ISETP")):
                pending.pop(regs[0], None)
    total = sum(by_distance.values()) or 1
    copies = sorted({16 * j // len(body) for j, r in enumerate(body)
                     if opcode(r["Source"]).startswith("LDGSTS")})
    return ({n: by_distance[n] / total for _, n in BUCKETS + ((0, "none"),)},
            [by_part[p] / total for p in range(16)], copies, len(body))


def main(argv):
    for item in argv:
        name, path = item.split("=", 1)
        rows = read(path)
        reasons, lds, copies = summary(rows)
        dist, parts, copy_parts, length = short_sb(rows)
        print(f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in list(reasons.items())[:8]))
        print(f"  shared wavefronts per FFMA: loads {lds:.4f}, copies {copies:.4f}")
        print("  short_scoreboard by distance from its load: "
              + ", ".join(f"{k} {v:.2f}" for k, v in dist.items()))
        print(f"  short_scoreboard by 1/16th of the {length}-instruction loop (* = copies issued there): "
              + " ".join(f"{100 * v:.0f}{'*' if p in copy_parts else ''}" for p, v in enumerate(parts)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
