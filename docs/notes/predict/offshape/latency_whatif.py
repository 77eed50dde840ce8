"""What-if: every kernel of the committed run at SHAPE predicted with ldg_latency at each of LATS
(the other constants as fitted for the H200), its error against the measured time and the mean
|error| per latency. No GPU.

    python docs/notes/predict/offshape/latency_whatif.py 1,18944,3584 800,650,550
"""
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from study.predict import check, issue, model  # noqa: E402
from study.predict.__main__ import registered  # noqa: E402
from study.rundata import results  # noqa: E402
from study.rundata.gpu import GPU  # noqa: E402
from study.toolchain.triton_child import TritonChild  # noqa: E402


def main():
    shape = tuple(int(x) for x in sys.argv[1].split(","))
    lats = [int(x) for x in sys.argv[2].split(",")]
    t = check.measured_times(results.read(Path("reports/data/results.csv")))
    t = t[(t.M == shape[0]) & (t.N == shape[1]) & (t.K == shape[2])]
    gpu = GPU.from_json("reports/data/gpu.json")
    base = issue.constants_for(gpu.name)
    errs = {lat: [] for lat in lats}
    with TritonChild() as child:
        for r in t.itertuples():
            try:
                config = getattr(r, "config", None) or None
                loop, launch, _ = registered(r.kernel, shape, "sm_90", child, config, sms=gpu.sms)
            except Exception:  # a kernel the model does not take
                continue
            row = []
            for lat in lats:
                c = dataclasses.replace(base, ldg_latency=lat)
                p = model.predict(loop[0], launch, shape, gpu, "sm_90", c=c, l1_cycles=loop[1])
                e = 100 * (p["ms"] / float(r.ms) - 1)
                errs[lat].append(abs(e))
                row.append(f"{e:+6.1f}%")
            print(f"{r.kernel:6s} {p['bound'][:22]:22s}", *row, flush=True)
    for lat in lats:
        mean = sum(errs[lat]) / len(errs[lat])
        print(f"ldg_latency {lat}: mean |error| {mean:.1f}% over {len(errs[lat])} kernels")



if __name__ == "__main__":
    main()
