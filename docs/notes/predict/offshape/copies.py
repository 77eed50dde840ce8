"""Each main-loop LDGSTS of the kernels source.py profiled: ncu's shared wavefronts, L1 tag
requests and L2 sectors per executed instruction, beside the model's cycles for it (lanes
interpreter, study.toolchain.access.copy_read_cycles plus copy_conflicts).

    python docs/notes/predict/offshape/copies.py docs/notes/predict/offshape/source_*_2085628.csv.gz

No GPU (the kernels compiled here, Triton 3.6 for the run's SASS). A kernel's main loop is the
LDGSTS rows with the most executions.
"""

from __future__ import annotations

import sys

import pandas as pd

from study.predict.__main__ import registered


def per_instruction(path: str) -> pd.DataFrame:
    d = pd.read_csv(path, low_memory=False)
    d = d[d["Source"].str.contains("LDGSTS", na=False) & (d["ncu_kernel"] != "transpose_kernel")].copy()
    for c in ("Instructions Executed", "L1 Wavefronts Shared", "L1 Tag Requests Global",
              "L2 Theoretical Sectors Global"):
        d[c] = pd.to_numeric(d[c].astype(str).str.replace(",", ""), errors="coerce")
    key = ["kernel", "M", "N", "K"]
    d = d[d["Instructions Executed"] == d.groupby(key)["Instructions Executed"].transform("max")]
    n = d["Instructions Executed"]
    return d.assign(wavefronts=d["L1 Wavefronts Shared"] / n, tags=d["L1 Tag Requests Global"] / n,
                    sectors=d["L2 Theoretical Sectors Global"] / n)


def main() -> int:
    d = pd.concat([per_instruction(p) for p in sys.argv[1:]])
    for (kid, M, N, K), rows in d.groupby(["kernel", "M", "N", "K"], sort=False):
        (body, cycles), _, _ = registered(kid, (M, N, K), "sm_90", sms=132)
        model = [c for i, c in zip(body, cycles) if i.base == "LDGSTS"]
        print(f"{kid} at {M}x{N}x{K}: {len(rows)} copies measured, {len(model)} in the model's loop")
        for (_, r), m in zip(rows.iterrows(), model + [None] * len(rows)):
            print(f"  {r['Source'][:58]:58s} ncu {r['wavefronts']:5.2f} wavefronts, {r['tags']:5.2f} tags, "
                  f"{r['sectors']:5.2f} sectors; model {m}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
