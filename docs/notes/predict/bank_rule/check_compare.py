"""Two `python -m study.predict --check` outputs (text) side by side: mean |error| per shape, the
kernels that moved at 4096^3, chosen kernels at every shape, the steps and twin ratios, the decode
panel.

    python3 docs/notes/predict/bank_rule/check_compare.py BEFORE.txt AFTER.txt
"""

import re
import sys
from collections import defaultdict

ROW = re.compile(r"^(\S+) at (\d+x\d+x\d+): predicted [\d.]+ ms, measured [\d.]+ \(([+-][\d.]+)%\), issue ([\d.]+)%")
SHAPE = re.compile(r"^at (\S+): (\d+) kernels, mean \|error\| ([\d.]+)%, largest ([\d.]+)% \((\S+)\); outside ±10%: (.*)$")
RATIO = re.compile(r"^(step|twin) (\S+) / (\S+): measured ([\d.]+)x, predicted ([\d.]+)x \(([+-][\d.]+)%\)")
PANEL = re.compile(r"^decode panel, (\S+): (\d+) of (\d+) points predicted, mean \|error\| ([\d.]+)%.*outside ±15%: (\d+)")
FOCUS = ("TAT", "TA", "G12", "G12T", "G6", "T5p", "K12", "K13", "K14", "K15", "K5", "K9", "G10")


def read(path):
    rows, shapes, ratios, panel = {}, {}, {}, {}
    for line in open(path):
        line = line.rstrip("\n")
        if m := ROW.match(line):
            rows[(m[1], m[2])] = (float(m[3]), float(m[4]))
        elif m := SHAPE.match(line):
            shapes[m[1]] = (int(m[2]), float(m[3]), float(m[4]), m[5], m[6])
        elif m := RATIO.match(line):
            ratios[(m[1], m[2], m[3])] = float(m[6])
        elif m := PANEL.match(line):
            panel[m[1]] = (float(m[4]), int(m[5]))
    return rows, shapes, ratios, panel


def main(a, b) -> int:
    ra, sa, qa, pa = read(a)
    rb, sb, qb, pb = read(b)
    print(f"before: {a}\nafter:  {b}\n")
    print("| shape | kernels | mean abs error before | after | largest before | after |")
    print("|---|---|---|---|---|---|")
    for s in sa:
        if s in sb:
            print(f"| {s} | {sa[s][0]} | {sa[s][1]:.1f}% | {sb[s][1]:.1f}% | {sa[s][2]:.1f}% ({sa[s][3]}) | "
                  f"{sb[s][2]:.1f}% ({sb[s][3]}) |")
    other = [s for s in sa if s in sb and s != "4096x4096x4096"]
    ma = sum(sa[s][1] for s in other) / len(other)
    mb = sum(sb[s][1] for s in other) / len(other)
    print(f"\nmean over the {len(other)} other shapes of the per-shape mean |error|: before {ma:.2f}%, after {mb:.2f}%")
    print("\nAt 4096x4096x4096, the kernels whose error moved by more than 0.5 point (error %, issue %):")
    print("| kernel | before | after |")
    print("|---|---|---|")
    for (k, s), (e, i) in sorted(ra.items()):
        if s == "4096x4096x4096" and (k, s) in rb and abs(rb[(k, s)][0] - e) > 0.5:
            print(f"| {k} | {e:+.1f}% ({i:.1f}) | {rb[(k, s)][0]:+.1f}% ({rb[(k, s)][1]:.1f}) |")
    print("\nChosen kernels, mean |error| over the shapes of the run (not the panel), before -> after:")
    by = defaultdict(lambda: [[], []])
    for (k, s), (e, _) in ra.items():
        if (k, s) in rb and s in sa:  # the run's shapes (a panel point that is one counts too)
            by[k][0].append(abs(e))
            by[k][1].append(abs(rb[(k, s)][0]))
    for k in FOCUS:
        if k in by:
            x, y = by[k]
            print(f"  {k:5s} {sum(x) / len(x):5.1f}% -> {sum(y) / len(y):5.1f}% over {len(x)} shapes")
    moved = [(k, r, qa[k], qb[k]) for k, r in [(k, None) for k in qa] if k in qb and abs(qb[k] - qa[k]) > 1.0]
    print("\nSteps and twin ratios that moved by more than 1 point (error of the predicted ratio):")
    for k, _, x, y in moved:
        print(f"  {k[0]} {k[1]} / {k[2]}: {x:+.1f}% -> {y:+.1f}%")
    ma = sum(abs(v) for v in qa.values()) / len(qa)
    mb = sum(abs(qb[k]) for k in qa if k in qb) / len(qa)
    print(f"  mean |error| over the {len(qa)} steps and twins: {ma:.2f}% -> {mb:.2f}%")
    print("\nDecode panel: " + "; ".join(f"{k} {pa[k][0]:.1f}% ({pa[k][1]} outside) -> {pb[k][0]:.1f}% ({pb[k][1]} outside)"
                                          for k in pa if k in pb))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
