"""ncu's dispatch stalls per issue across kernels, with the part the per-PC samples point at besides the
banks: per kernel, the loop's instructions that follow a stall count of 2 or more and those that
wait on a scoreboard (per loop instruction), with and without each bank rule's count per loop
instruction, least squares over the kernels at >= 60% issue in ncu.

    PYTHONPATH=. python docs/notes/predict/bank_rule/kernel_fit.py
"""

import pickle
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rules import RULES, count_each, name, ncu_gemm  # noqa: E402

HERE = Path(__file__).resolve().parent


def r2(X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    X = np.column_stack([np.ones(len(y)), X])
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    res = y - X @ beta
    return 1 - (res @ res) / ((y - y.mean()) @ (y - y.mean())), beta


def main() -> int:
    loops = pickle.load(open(HERE / "loops.pkl", "rb"))
    ncu = ncu_gemm()
    kids = [k for k in loops if k in ncu.index and ncu.issue[k] >= 60]
    y = ncu.dispatch[kids].to_numpy()
    feats = {}
    for k in kids:
        b = loops[k]["body"]
        n = len(b)
        feats[k] = {"after_stall2": sum(b[j - 1].control.stall >= 2 for j in range(n)) / n,
                    "waits": sum(bool(i.control.wait) for i in b) / n}
    f = pd.DataFrame(feats).T
    print(f"{len(kids)} kernels at >= 60% issue in ncu: {' '.join(kids)}")
    print(pd.concat([f, ncu.dispatch[kids]], axis=1).round(3).to_string())
    base, beta = r2(f.to_numpy(), y)
    print(f"\ndispatch ~ after_stall2 + waits: R^2 {base:.3f} (coefficients {np.round(beta, 3)})")
    rows = []
    for rule in RULES:
        x = np.array([sum(count_each(loops[k]["body"], **rule)) / len(loops[k]["body"]) for k in kids])
        alone, _ = r2(x[:, None], y)
        both, bb = r2(np.column_stack([f.to_numpy(), x]), y)
        rows.append({"rule": name(rule), "R2_alone": alone, "R2_with_stall_waits": both, "coef": bb[-1]})
    df = pd.DataFrame(rows).sort_values("R2_with_stall_waits", ascending=False)
    df = df[df.rule.str.contains("fp32")]
    print("\nPer bank rule (fp32 scope, slots abc or ab): R^2 of dispatch ~ count per instruction, alone and beside the two "
          "features above; coef: the count's coefficient (dispatch-stalled warps per issue per extra read per instruction)")
    print(df.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
