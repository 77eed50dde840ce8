"""Blocks resident on an SM started out of phase: block b's warps start the loop at instruction
b * len(body) // blocks (a patch of issue._Sim.__init__, not kept in the model), against the
model's start in lockstep; and so started, with ldg_latency 1000 and 1200. Each kernel's error
against the committed run's time at SHAPE.

    python docs/notes/predict/phase/stagger.py 4096,4096,4096 K3,K4,...

No GPU (nvcc, cuobjdump; the Triton the run timed for its twins)."""
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from study.predict import check, issue, model  # noqa: E402
from study.predict.__main__ import registered  # noqa: E402
from study.rundata import results  # noqa: E402
from study.rundata.gpu import GPU  # noqa: E402
from study.toolchain.triton_child import TritonChild  # noqa: E402

_init = issue._Sim.__init__


def staggered(self, body, warps_per_block, blocks, *a, **k):
    _init(self, body, warps_per_block, blocks, *a, **k)
    for w in self.warps:
        w.pc = (w.block * len(body)) // blocks


def main():
    shape = tuple(int(x) for x in sys.argv[1].split(","))
    kids = sys.argv[2].split(",") if len(sys.argv) > 2 else None
    rows = results.read(Path("reports/data/results.csv"))
    t = check.measured_times(rows)
    t = t[(t.M == shape[0]) & (t.N == shape[1]) & (t.K == shape[2])]
    gpu = GPU.from_json("reports/data/gpu.json")
    with TritonChild() as child:
        for r in t.itertuples():
            if kids and r.kernel not in kids:
                continue
            try:
                config = getattr(r, "config", None) or None
                loop, launch, _ = registered(r.kernel, shape, "sm_90", child, config, sms=gpu.sms)
            except Exception as e:  # a kernel the model does not take
                print(f"{r.kernel}: {e}")
                continue
            out = []
            base = issue.constants_for(gpu.name)
            for patch, lat in ((False, base.ldg_latency), (True, base.ldg_latency), (True, 1000),
                               (True, 1200)):
                issue._Sim.__init__ = staggered if patch else _init
                c = dataclasses.replace(base, ldg_latency=lat)
                p = model.predict(loop[0], launch, shape, gpu, "sm_90", c=c, l1_cycles=loop[1])
                out.append(100 * (p["ms"] / float(r.ms) - 1))
            print(f"{r.kernel:6s} blocks/SM {p['blocks_per_sm']:2d}  lockstep {out[0]:+6.1f}%  "
                  f"staggered {out[1]:+6.1f}%  at 1000 {out[2]:+6.1f}%  at 1200 {out[3]:+6.1f}%", flush=True)


if __name__ == "__main__":
    main()
