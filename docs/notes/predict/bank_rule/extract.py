"""Compile every kernel that has ncu counters (reports/data/ncu.csv) or a time (results.csv) at
4096^3 as `--check` does (nvcc 13.0, Triton 3.6, TA at the configuration the run timed) and keep,
per kernel, the loop the model plays (`study.predict.__main__.registered`), its L1 cycles and its launch, in
bank_rule/loops.pkl (not kept: extract.py rebuilds it in about a minute).

    (from the repository root, with Triton 3.6 and its cuobjdump on PATH)
    PYTHONPATH=. python docs/notes/predict/bank_rule/extract.py
"""

import pickle
import sys
from pathlib import Path

import pandas as pd

from study import kernels
from study.predict import check
from study.predict.__main__ import registered
from study.rundata import results
from study.rundata.gpu import GPU
from study.toolchain.triton_child import TritonChild

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
MAIN = (4096, 4096, 4096)


def main() -> int:
    ncu = pd.read_csv(ROOT / "reports/data/ncu.csv")
    at = ncu[(ncu.M == 4096) & (ncu.N == 4096) & (ncu.K == 4096)]
    times = check.measured_times(results.read(ROOT / "reports/data/results.csv"))
    timed = times[(times.M == 4096) & (times.N == 4096) & (times.K == 4096)]
    kids = sorted(set(at.kernel) | set(timed.kernel))  # with ncu counters, or timed, at 4096^3
    gpu = GPU.from_json(ROOT / "reports/data/gpu.json")
    out = {}
    with TritonChild() as child:
        for kid in kids:
            if kid not in kernels.BY_ID or not check.predictable(kid):
                print(f"{kid}: not predictable, skipped", flush=True)
                continue
            row = times[(times.kernel == kid) & (times.M == 4096) & (times.N == 4096) & (times.K == 4096)]
            config = check.config_of(row.iloc[0]["config"]) if len(row) else None
            try:
                (body, cycles), launch, cfg = registered(kid, MAIN, "sm_90", child, config, sms=gpu.sms)
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"{kid}: {type(e).__name__}: {e}", flush=True)
                continue
            out[kid] = {"body": body, "cycles": cycles, "launch": launch, "config": cfg}
            print(f"{kid}: loop {len(body)} instructions, {sum(i.base == 'FFMA' for i in body)} FFMA", flush=True)
    with open(HERE / "loops.pkl", "wb") as f:
        pickle.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
