"""A family of register-bank rules counted on the main loop of every kernel that has ncu counters at
4096^3, set against ncu's dispatch stalls per issue (reports/data/ncu.csv, the GEMM launch: the
launch with the most instructions).

    PYTHONPATH=. python docs/notes/predict/bank_rule/rules.py [--all]

Reads bank_rule/loops.pkl (extract.py). A rule is (banks, map, mode, reuse, scope):

* banks n = 2, 4, 8; map ``mod``: bank = r mod n; ``pair``: bank = (r // 2) mod n (64-bit-wide
  banks, an even/odd pair in one bank);
* mode ``extra``: per instruction, reads of one bank beyond the first (the current rule);
  ``any``: 1 when some bank is read twice or more; ``all3``: reads of one bank beyond the second
  (a bank serves two reads a cycle: Jia et al.'s Volta rule, a conflict only when three sources
  share a bank);
* reuse ``cache``: a source is not read when the previous instruction set that slot's reuse
  flag and read the same register there (the current rule); ``none``: every distinct source is
  read; ``slot``: a source is not read when the previous instruction read the same register in
  that slot, flag or not;
* scope ``fp32``: FFMA, IMAD, FMUL, FADD (sass.BANKED); ``alu``: every FP32-pipe and integer
  instruction with register sources (issue.FMA_PIPE | issue.ALU_PIPE);
* slots ``abc`` (the current rule) or ``ab``: slot c (an FFMA's accumulator) not read through the
  banks (name suffix ``-ab``).

Per rule: the count per FFMA and per loop instruction for each kernel, and Pearson / Spearman of
the count per instruction against ncu's dispatch_stall per issue over the kernels.
"""

import itertools
import math
import pickle
import re
import sys
from pathlib import Path

import pandas as pd

from study.predict.issue import ALU_PIPE, FMA_PIPE
from study.toolchain.sass import BANKED

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
SRC = re.compile(r"^[-|!]*R(\d+)\b")
DISPATCH = "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio"
ISSUE = "smsp__issue_active.avg.pct_of_peak_sustained_active"
INST = "smsp__inst_executed.sum"
FOCUS = ("TAT", "TA", "G12", "G12T", "K12", "K14", "K15", "T5p", "G6")


def sources(ins) -> dict[int, int]:
    """slot (0 = a, 1 = b, 2 = c) -> register number, for the operands after the destination."""
    ops = [o.strip() for o in ins.operands.split(",")]
    out = {}
    for slot, text in enumerate(ops[1:4]):
        m = SRC.match(text)
        if m:
            out[slot] = int(m[1])
    return out


def count_each(loop, banks=4, bmap="mod", mode="extra", reuse="cache", scope="fp32", slots="abc") -> list[int]:
    """Extra cycles per instruction of ``loop`` under one rule (see the module docstring)."""
    last = 3 if slots == "abc" else 2
    ops = set(BANKED) if scope == "fp32" else FMA_PIPE | ALU_PIPE
    counts = []
    prev: dict[int, int] = {}
    for ins in loop:
        regs = sources(ins) if ins.base in ops and ins.pred != "@!PT" else {}
        if reuse == "none":
            read = {r for s, r in regs.items() if s < last}
        else:
            read = {r for s, r in regs.items() if prev.get(s) != r and s < last}
        per_bank: dict[int, int] = {}
        for r in read:
            b = (r if bmap == "mod" else r // 2) % banks
            per_bank[b] = per_bank.get(b, 0) + 1
        if mode == "extra":
            n = sum(v - 1 for v in per_bank.values())
        elif mode == "any":
            n = int(any(v > 1 for v in per_bank.values()))
        else:  # all3
            n = sum(max(0, v - 2) for v in per_bank.values())
        counts.append(n)
        flags = ins.control.reuse if ins.control else 0
        if reuse == "cache":
            prev = {s: r for s, r in regs.items() if (flags >> s) & 1}
        else:
            prev = regs
    return counts


RULES = [dict(banks=b, bmap=m, mode=mo, reuse=r, scope=s, slots=sl)
         for b, m, mo, r, s, sl in itertools.product((2, 4, 8), ("mod", "pair"), ("extra", "any", "all3"),
                                                      ("cache", "none", "slot"), ("fp32", "alu"), ("abc", "ab"))]
CURRENT = dict(banks=4, bmap="mod", mode="extra", reuse="cache", scope="fp32", slots="abc")


def name(rule: dict) -> str:
    return (f"{rule['bmap']}{rule['banks']}-{rule['mode']}-{rule['reuse']}-{rule['scope']}"
            + ("-ab" if rule.get("slots") == "ab" else ""))


def ncu_gemm() -> pd.DataFrame:
    """Per kernel at 4096^3: dispatch per issue, issue %, instructions, of the launch with the most
    instructions."""
    d = pd.read_csv(ROOT / "reports/data/ncu.csv")
    d = d[(d.M == 4096) & (d.N == 4096) & (d.K == 4096)]
    p = d.pivot_table(index=["kernel", "launch"], columns="metric", values="value", aggfunc="first")
    p = p.reset_index().sort_values(INST).groupby("kernel").tail(1).set_index("kernel")
    return p[[DISPATCH, ISSUE, INST]].rename(columns={DISPATCH: "dispatch", ISSUE: "issue", INST: "inst"})


def spearman(x: pd.Series, y: pd.Series) -> float:
    return x.rank().corr(y.rank())


def main(argv) -> int:
    loops = pickle.load(open(HERE / "loops.pkl", "rb"))
    ncu = ncu_gemm()
    kids = [k for k in loops if k in ncu.index]
    ffma = {k: sum(i.base == "FFMA" for i in loops[k]["body"]) for k in kids}
    n_ins = {k: len(loops[k]["body"]) for k in kids}
    print(f"{len(kids)} kernels with a played loop and ncu counters at 4096^3: {' '.join(kids)}\n")
    print("ncu (GEMM launch) and the loop: dispatch per issue, issue %, loop instructions, FFMA")
    for k in kids:
        print(f"  {k:5s} dispatch {ncu.dispatch[k]:.2f}  issue {ncu.issue[k]:5.1f}%  loop {n_ins[k]:5d}  FFMA {ffma[k]:5d}")
    rows = []
    per_rule = {}
    for rule in RULES:
        c = {k: sum(count_each(loops[k]["body"], **rule)) for k in kids}
        per_ins = pd.Series({k: c[k] / n_ins[k] for k in kids})
        per_ffma = pd.Series({k: c[k] / ffma[k] for k in kids})
        y = ncu.dispatch[kids]
        # the FFMA-bound kernels only: issue >= 60 % in ncu (the bank cost is visible where the
        # scheduler is the limit)
        hot = [k for k in kids if ncu.issue[k] >= 60]
        rows.append({"rule": name(rule), "pearson": per_ins.corr(y), "spearman": spearman(per_ins, y),
                     "pearson_hot": per_ins[hot].corr(y[hot]), "spearman_hot": spearman(per_ins[hot], y[hot]),
                     **{f"{k}": per_ffma[k] for k in FOCUS if k in kids}})
        per_rule[name(rule)] = (per_ins, per_ffma)
    df = pd.DataFrame(rows).sort_values("pearson_hot", ascending=False)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_rows", 500)
    hot = [k for k in kids if ncu.issue[k] >= 60]
    print(f"\n'hot': the {len(hot)} kernels at >= 60% issue in ncu: {' '.join(hot)}")
    print("\nPer rule: correlation of extra reads per loop instruction with ncu dispatch per issue "
          "(all kernels, and the hot ones), and extra reads per FFMA of some kernels; sorted by pearson_hot")
    shown = df if "--all" in argv else pd.concat([df.head(25), df[df.rule == name(CURRENT)]])
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    df.to_csv(HERE / "rules_table.csv", index=False, float_format="%.4f")
    best = list(df.rule.head(3))
    for r in [name(CURRENT)] + [b for b in best if b != name(CURRENT)]:
        per_ins, per_ffma = per_rule[r]
        print(f"\n{r}: per kernel, extra reads per FFMA and per instruction, ncu dispatch per issue")
        for k in sorted(kids, key=lambda k: ncu.dispatch[k]):
            print(f"  {k:5s} {per_ffma[k]:.3f} {per_ins[k]:.3f}  ncu {ncu.dispatch[k]:.2f} (issue {ncu.issue[k]:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
