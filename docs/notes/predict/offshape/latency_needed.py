"""What-if: the global latency each kernel would need at each shape of the committed run. Every
kernel named, at every shape the run timed it, predicted with ``ldg_latency`` at each of LATS
(the other constants as fitted for the H200); ``--table`` reads the rows back and gives, where
the error moves by at least 5 points between 600 and 1000 cycles, the latency at which it
would be zero (linear between the two LATS around it) beside the launch's residency. No GPU.

    python docs/notes/predict/offshape/latency_needed.py K2,K6,G6 OUT.jsonl
    python docs/notes/predict/offshape/latency_needed.py --table OUT.jsonl
"""
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))

LATS = (450, 600, 800, 1000, 1300)


def sweep(kernels: list[str], out: str) -> None:
    from study.predict import check, issue, model
    from study.predict.__main__ import registered
    from study.rundata import results
    from study.rundata.gpu import GPU
    from study.toolchain.triton_child import TritonChild

    t = check.measured_times(results.read(Path("reports/data/results.csv")))
    gpu = GPU.from_json("reports/data/gpu.json")
    base = issue.constants_for(gpu.name)
    with open(out, "a") as f, TritonChild() as child:
        for r in t[t.kernel.isin(kernels)].itertuples():
            shape = (int(r.M), int(r.N), int(r.K))
            config = getattr(r, "config", None) or None
            try:
                loop, launch, _ = registered(r.kernel, shape, "sm_90", child, config, sms=gpu.sms)
            except Exception:  # a kernel the model does not take
                continue
            errs, at = {}, None
            for lat in LATS:
                c = dataclasses.replace(base, ldg_latency=lat)
                p = model.predict(loop[0], launch, shape, gpu, "sm_90", c=c, l1_cycles=loop[1])
                errs[lat] = 100 * (p["ms"] / float(r.ms) - 1)
                at = p if lat == base.ldg_latency else at
            row = {"kernel": r.kernel, "shape": shape, "ms": float(r.ms), "errs": errs, "bound": at["bound"],
                   "waves": at["waves"], "blocks_per_sm": at["blocks_per_sm"],
                   "loop_warps_per_sm": at["loop_warps_per_sm"], "blocks": launch.blocks}
            f.write(json.dumps(row) + "\n")
            print(r.kernel, shape, {k: round(v, 1) for k, v in errs.items()}, flush=True)


def zero_at(errs: dict) -> float | None:
    pts = sorted((int(k), v) for k, v in errs.items())
    for (l0, e0), (l1, e1) in zip(pts, pts[1:]):
        if min(e0, e1) <= 0 <= max(e0, e1) and e0 != e1:
            return l0 + (l1 - l0) * -e0 / (e1 - e0)
    return None


def table(path: str) -> None:
    print("kernel shape             error at 800  latency for 0  waves  blocks/SM  loop warps/SM")
    for line in open(path):
        r = json.loads(line)
        errs = {int(k): v for k, v in r["errs"].items()}
        if abs(errs[1000] - errs[600]) < 5:
            continue
        z = zero_at(errs)
        need = f"{z:.0f}" if z is not None else "outside"
        print(f"{r['kernel']:6} {'x'.join(map(str, r['shape'])):17} {errs[800]:+11.1f}% {need:>14} "
              f"{r['waves']:6} {r['blocks_per_sm']:10} {r['loop_warps_per_sm']:14}")


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        table(sys.argv[2])
    else:
        sweep(sys.argv[1].split(","), sys.argv[2])
