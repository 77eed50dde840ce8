"""Every kernel of bank_rule/loops.pkl predicted at 4096^3 with the fitted H200 constants, changed
only in the bank rule (issue.Constants.banks / bank_rule / bank_cycles), beside the run's time and
ncu's issue rate and dispatch stalls per issue.

    PYTHONPATH=. python docs/notes/predict/bank_rule/sim.py [RULE ...]

RULE is NAME (a key of CANDIDATES). Prints, per rule, per kernel: predicted ms and its error, the
predicted issue % and dispatch stalls per issue beside ncu's; then per rule mean |error| over all
kernels, the correlation of predicted with ncu dispatch per issue, and the mean |issue-point
error| over the kernels with ncu counters.
"""

import pickle
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from study.predict import check, issue, model
from study.rundata import results
from study.rundata.gpu import GPU
from study.toolchain import sass

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rules import ncu_gemm  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
MAIN = (4096, 4096, 4096)
CANDIDATES = {
    "mod4-extra (current)": dict(banks=4, bank_rule="mod-extra"),
    "pair2-extra-ab": dict(banks=2, bank_rule="pair-extra-ab"),
    "mod2-extra-ab": dict(banks=2, bank_rule="mod-extra-ab"),
    "mod4-extra-ab": dict(banks=4, bank_rule="mod-extra-ab"),
    "no banks": dict(bank_cycles=0),
    "mod2-extra": dict(banks=2, bank_rule="mod-extra"),
    "mod2-all3 (Volta)": dict(banks=2, bank_rule="mod-all3"),
    "pair4-extra": dict(banks=4, bank_rule="pair-extra"),
    "pair2-all3": dict(banks=2, bank_rule="pair-all3"),
}


SEEN: dict = {}  # (kernel, the conflicts' cycles per instruction) -> (prediction, loop): the same play


def run(rule: str, loops, gpu, measured, ncu) -> pd.DataFrame:
    c = replace(issue.FITTED["NVIDIA H200"], **CANDIDATES[rule])
    rows = []
    for kid, v in loops.items():
        if kid not in measured:
            continue
        key = (kid, tuple(n * c.bank_cycles for n in sass.bank_conflicts_each(v["body"], c.banks, c.bank_rule)))
        if key not in SEEN:
            kept: dict = {}
            p = model.predict(v["body"], v["launch"], MAIN, gpu, c=c, l1_cycles=v["cycles"], loops=kept)
            SEEN[key] = (p, next(iter(kept.values())))
        p, loop = SEEN[key]
        warps = loop.warps / 4  # the warps the loop was played for, per scheduler
        share = loop.stalls.get("dispatch_stall", 0.0)
        disp = share * warps / (loop.issue_pct / 100) if loop.issue_pct else float("nan")
        rows.append({"rule": rule, "kernel": kid, "ms": p["ms"], "measured": measured[kid],
                     "error_pct": 100 * (p["ms"] / measured[kid] - 1), "issue": p["issue_pct"],
                     "dispatch": disp,
                     "ncu_issue": ncu.issue.get(kid, np.nan), "ncu_dispatch": ncu.dispatch.get(kid, np.nan)})
    return pd.DataFrame(rows)


def main(argv) -> int:
    loops = pickle.load(open(HERE / "loops.pkl", "rb"))
    gpu = GPU.from_json(ROOT / "reports/data/gpu.json")
    times = check.measured_times(results.read(ROOT / "reports/data/results.csv"))
    at = times[(times.M == 4096) & (times.N == 4096) & (times.K == 4096)]
    measured = dict(zip(at.kernel, at.ms))
    ncu = ncu_gemm()
    names = argv or list(CANDIDATES)
    frames = []
    for r in names:
        frames.append(run(r, loops, gpu, measured, ncu))
        d = frames[-1].set_index("kernel")
        print(f"{r}: mean |error| {d.error_pct.abs().mean():.2f}% over {len(d)} kernels; "
              + ", ".join(f"{k} {d.error_pct[k]:+.1f}%" for k in ("TAT", "TA", "G12", "G12T", "K12", "K14")), flush=True)
    df = pd.concat(frames)
    df.to_csv(HERE / "sim_table.csv", index=False, float_format="%.4f")
    wide = df.pivot(index="kernel", columns="rule", values="error_pct")[names]
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    print("Error of the predicted time at 4096^3 (%), per kernel and rule:")
    print(wide.round(1).to_string())
    iss = df.pivot(index="kernel", columns="rule", values="issue")[names]
    iss["ncu"] = ncu.issue.reindex(iss.index)
    print("\nPredicted issue % (ncu's last):")
    print(iss.round(1).to_string())
    dsp = df.pivot(index="kernel", columns="rule", values="dispatch")[names]
    dsp["ncu"] = ncu.dispatch.reindex(dsp.index)
    print("\nPredicted dispatch stalls per issue (ncu's last):")
    print(dsp.round(2).to_string())
    print("\nSummary per rule: mean |error| of the time over the kernels; over those with ncu counters, mean "
          "|issue % - ncu|, Pearson and Spearman of predicted with ncu dispatch per issue")
    for r in names:
        d = df[df.rule == r]
        n = d.dropna(subset=["ncu_issue"])
        print(f"  {r:22s} {len(d)} kernels, mean |error| {d.error_pct.abs().mean():5.2f}%  "
              f"(TAT {d.set_index('kernel').error_pct.get('TAT', np.nan):+5.1f}%, "
              f"TA {d.set_index('kernel').error_pct.get('TA', np.nan):+5.1f}%, "
              f"G12 {d.set_index('kernel').error_pct.get('G12', np.nan):+5.1f}%, "
              f"K12 {d.set_index('kernel').error_pct.get('K12', np.nan):+5.1f}%)  "
              f"issue |err| {(n.issue - n.ncu_issue).abs().mean():5.2f} pts over {len(n)}  "
              f"dispatch r {n.dispatch.corr(n.ncu_dispatch):+.2f} / rho {n.dispatch.rank().corr(n.ncu_dispatch.rank()):+.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
