"""ncu's warp states at chosen residencies (ncu.sh's rows) beside the model's simulation of the same
loop with the same blocks an SM: issue %, and each state's share of the warps' cycles (ncu's
"warps stalled per issue" over their sum; the simulation's states over its warp-cycles).

    python docs/notes/predict/phase/stalls.py NCU.csv RESIDENCY.jsonl

No GPU."""
import dataclasses
import json
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path.cwd()))
from study.predict import issue, model  # noqa: E402
from study.predict.__main__ import DEFAULT_GPU, registered  # noqa: E402
from study.rundata.gpu import GPU  # noqa: E402

SHAPE = (4096, 4096, 4096)
PREFIX, SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"


def main() -> int:
    d = pd.read_csv(sys.argv[1])
    rows = {}
    for line in open(sys.argv[2]):
        r = json.loads(line)
        if "residency" in r:
            rows[(r["kernel"], r["residency"])] = r
    gpu = GPU.from_json(DEFAULT_GPU)
    c = issue.constants_for(gpu.name)
    for case in d["case"].unique():
        kid, res = case.split(":")
        r = rows[(kid, int(res))]
        (body, cycles), launch, _ = registered(kid, SHAPE, "sm_90")
        p = model.predict(body, dataclasses.replace(launch, smem=r["static_smem"] + r["dynamic_smem"]), SHAPE, gpu,
                          "sm_90", c=c, l1_cycles=cycles)
        loop = issue.simulate(body, -(-(launch.compute_threads or launch.threads) // 32), int(res), c, l1_cycles=cycles)
        s = d[d["case"] == case].set_index("metric")["value"].astype(float)
        states = {m[len(PREFIX):-len(SUFFIX)]: v for m, v in s.items() if m.startswith(PREFIX)}
        total = sum(states.values())
        ncu = {k: v / total for k, v in states.items() if v / total >= 0.02}
        sim = {k: v for k, v in loop.stalls.items() if v >= 0.02}
        print(f"{case}: time {100 * (p['ms'] / r['ms'] - 1):+.1f}%; issue ncu "
              f"{s['smsp__issue_active.avg.pct_of_peak_sustained_active']:.1f}%, model {loop.issue_pct:.1f}%")
        print("   ncu:  ", ", ".join(f"{k} {v:.2f}" for k, v in sorted(ncu.items(), key=lambda kv: -kv[1])))
        print("   model:", ", ".join(f"{k} {v:.2f}" for k, v in sorted(sim.items(), key=lambda kv: -kv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
