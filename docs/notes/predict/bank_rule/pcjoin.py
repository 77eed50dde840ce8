"""ncu's per-instruction stall samples (docs/notes/g12/data/source_*.csv.gz) joined with the loops
of bank_rule/loops.pkl (compiled here: ncu's page has no reuse flags), and each bank rule's
per-instruction count set against the dispatch samples of the main loop's FFMAs.

    PYTHONPATH=. python docs/notes/predict/bank_rule/pcjoin.py

Joined where the loop's text equals the device's instruction by instruction (reuse marks aside, an
LDGSTS's operands in either order, a branch's target aside): K12 255 (K12's default build), K14 and
K15 by address, the G12 builds in order; the others are left out. Samples become warp-cycles per
pass of one warp: an instruction's dispatch samples over the mean ``selected`` samples per loop
instruction (one issue, one cycle).

Per rule, over the "clean" FFMAs (no wait mask, after an instruction of stall count 1, so that
neither a scoreboard nor the spikes after longer stall counts are in them): dispatch warp-cycles
on a flagged FFMA against an unflagged one, and the correlation of the count with them.
"""

import gzip
import csv
import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rules import RULES, CURRENT, count_each, name  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
DATA = ROOT / "docs/notes/g12/data"


def read(path):
    with gzip.open(path, "rt", errors="replace") as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip('"').startswith("Address"))
    d = pd.DataFrame(list(csv.DictReader(lines[start:])))
    for c in d.columns:
        if c not in ("Address", "Source"):
            d[c] = pd.to_numeric(d[c].str.replace(",", ""), errors="coerce").fillna(0)
    d["addr"] = d.Address.map(lambda a: int(a, 16))
    d["addr"] -= d.addr.iloc[0]
    return d


def norm(text: str) -> str:
    """The instruction's text without reuse marks; an LDGSTS's operands sorted (ncu prints them in
    another order than cuobjdump), a branch's target left out (ncu prints absolute addresses)."""
    text = re.sub(r"\s+", " ", text.replace(".reuse", "")).strip()
    pred = ""
    if text.startswith("@"):
        pred, text = text.split(" ", 1)
    op, _, args = text.partition(" ")
    parts = [x.strip() for x in args.split(",")] if args else []
    if op.startswith("LDGSTS"):
        parts.sort()
    if op.startswith(("BRA", "BSSY", "CALL", "JMP")):
        parts = [re.sub(r"0x[0-9a-f]+", "<target>", x) for x in parts]
    return " ".join(x for x in (pred, op, ", ".join(parts)) if x)


def text_of(ins) -> str:
    return norm(f"{ins.pred} {ins.opcode} {ins.operands}")


def joined_loops(loops) -> dict:
    """build -> (the loop compiled here, dispatch samples, selected samples) per instruction, for the
    builds whose loop text equals the device's: the CUDA builds by address, the G12 builds in order
    (their addresses moved with the code before the loop)."""
    builds = {"K12_255": "K12", "K14": "K14", "K15": "K15",
              "G12_old": "G12", "G12_plain": "G12", "G12_ahead": "G12", "G12_kept": "G12"}
    out = {}
    for b, kid in builds.items():
        body = loops[kid]["body"]
        d = read(DATA / f"source_{b}.csv.gz")
        by_addr = d.set_index("addr")
        rows = None
        if all(i.addr in by_addr.index and norm(by_addr.Source[i.addr]) == text_of(i) for i in body):
            rows = [by_addr.loc[i.addr] for i in body]
        else:
            ex = d["Instructions Executed"]
            hot = d[ex > 0.5 * ex.max()].reset_index(drop=True)
            if len(hot) == len(body) and all(text_of(i) == norm(t) for i, t in zip(body, hot.Source)):
                rows = [hot.iloc[j] for j in range(len(body))]
        if rows is None:
            print(f"{b}: its loop is not the loop of {kid} compiled here; left out")
            continue
        print(f"{b}: {len(body)} loop instructions joined with {kid} compiled here")
        out[b] = (body, np.array([r.stall_dispatch for r in rows], float),
                  np.array([r.stall_selected for r in rows], float))
    return out


def main() -> int:
    loops = pickle.load(open(HERE / "loops.pkl", "rb"))
    joined = joined_loops(loops)
    rows = []
    for b, (loop, disp, sel) in joined.items():
        unit = sel.mean()  # samples of one issue of one instruction: a warp-cycle
        cyc = disp / unit  # dispatch-stalled warp-cycles per pass of one warp, per instruction
        ffma = np.array([i.base == "FFMA" for i in loop])
        prev_stall = np.array([loop[j - 1].control.stall for j in range(len(loop))])
        waits = np.array([bool(i.control.wait) for i in loop])
        clean = ffma & (prev_stall <= 1) & ~waits
        print(f"\n{b}: {cyc.sum():.0f} dispatch-stalled warp-cycles per pass, {cyc[ffma].sum():.0f} on its "
              f"{ffma.sum()} FFMA ({cyc[clean].sum():.0f} on the {clean.sum()} FFMA that wait on nothing and "
              f"follow a stall count of 1); {cyc[~ffma].sum():.0f} on the {(~ffma).sum()} others")
        after = prev_stall >= 2
        print(f"  on instructions after a stall count >= 2: {cyc[after].sum():.0f} over {after.sum()} "
              f"({cyc[after].mean():.2f} each); with a wait mask: {cyc[waits].sum():.0f} over {waits.sum()} "
              f"({cyc[waits].mean():.2f} each); the rest: {cyc[~after & ~waits].mean():.2f} each")
        for rule in RULES:
            c = np.array(count_each(loop, **rule), dtype=float)
            f = clean & (c > 0)
            o = clean & (c == 0)
            rows.append({"build": b, "rule": name(rule), "flagged": int(f.sum()), "clean": int(clean.sum()),
                         "cyc_flagged": cyc[f].mean() if f.any() else float("nan"),
                         "cyc_other": cyc[o].mean() if o.any() else float("nan"),
                         "corr_clean": np.corrcoef(c[clean], cyc[clean])[0, 1] if c[clean].std() else float("nan"),
                         "corr_all_ffma": np.corrcoef(c[ffma], cyc[ffma])[0, 1] if c[ffma].std() else float("nan")})
    df = pd.DataFrame(rows)
    df["excess"] = df.cyc_flagged - df.cyc_other
    df.to_csv(HERE / "pcjoin_table.csv", index=False, float_format="%.4f")
    pd.set_option("display.width", 250)
    pd.set_option("display.max_rows", 500)
    mean = df.groupby("rule")["excess"].mean().sort_values(ascending=False)
    print("\nPer rule, over the clean FFMAs (no wait mask, after a stall count of 1): dispatch-stalled warp-"
          "cycles per pass on a flagged one vs an unflagged one (excess = the difference), and the correlation "
          "of the count with them; rules sorted by mean excess over the builds")
    for r in mean.index:
        sub = df[df.rule == r]
        print(f"  {r:24s} excess {mean[r]:+.3f}  " + "  ".join(
            f"{row.build}: {row.flagged}/{row.clean} {row.cyc_flagged:.2f} vs {row.cyc_other:.2f} (r {row.corr_clean:+.2f})"
            for row in sub.itertuples()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
