"""Other choices of the schedulers, tried against phase.py's measurements: study.predict.issue picks
among a scheduler's ready warps the one that issued least recently ("lrr"); here its choice is
replaced (a patch of issue._Sim.cycle, not kept in the model) by

* "oldest": the warps of the block that arrived first before any other's, least recently issued
  among them;
* "ready": the warp that has been ready longest (least recently issued among those);
* "mio-oldest": as "lrr", but where that warp's next instruction is a shared-memory access, the
  oldest block's ready warp whose next instruction is one issues instead.

    python docs/notes/predict/phase/policies.py pace POLICY K3:2,K7:2,...   # cycles a trip by age
    python docs/notes/predict/phase/policies.py fit POLICY RUN_DIR           # 4096^3, a small grid
    python docs/notes/predict/phase/policies.py residency POLICY ROWS        # phase.py's rows

``pace``: as compare.py, the simulated cycles a trip of each resident block, oldest first.
``fit``: every kernel of study.predict.fit's declared set at 4096³ under ldg_latency (600, 800,
1000) x mio_queue (8, 16) x barrier_latency (20, 60), the other fields as fitted for the H200; the
mean |log(predicted / measured)| of each candidate, best first. Where the blocks do not keep one
pace, an iteration is counted as every warp's at the rate the SM issued (the steady state of the
oldest block's passes; "lrr" keeps the model's own count). No GPU."""
import dataclasses
import functools
import itertools
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path.cwd()))
from study.predict import fit, issue, model  # noqa: E402
from study.predict.__main__ import registered  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import paces  # noqa: E402

POLICY = ["lrr"]


def cycle(self, s, t, counting):
    """issue._Sim.cycle with the choice of POLICY[0]."""
    self.mio_waiting[s] = [x for x in self.mio_waiting[s] if x > t]
    self.lg_waiting[s] = [x for x in self.lg_waiting[s] if x > t]
    live = self.by_sched[s]
    states = {id(w): self.state(w, s, t) for w in live}
    ready = [w for w in live if states[id(w)] is None]
    for w in live:
        w.ready_since = None if states[id(w)] is not None else (getattr(w, "ready_since", None) or t)
    if ready and self.dispatch_free[s] > t:
        for w in ready:
            states[id(w)] = "dispatch_stall"
        ready = []
    chosen = None
    if ready:
        key = {"lrr": lambda w: w.waited_since, "mio-oldest": lambda w: w.waited_since, "oldest": lambda w: (w.block, w.waited_since),
               "ready": lambda w: (w.ready_since, w.waited_since)}[POLICY[0]]
        chosen = min(ready, key=key)
        if POLICY[0] == "mio-oldest" and self.kinds[chosen.pc] == "shared":
            chosen = min((w for w in ready if self.kinds[w.pc] == "shared"), key=lambda w: (w.block, w.waited_since))
        self.issue(chosen, s, t, counting)
    if counting:
        for w in live:
            self.states["selected" if w is chosen else (states[id(w)] or "not_selected")] += 1


def simulate(body, warps_per_block, blocks, c, iterations=4, schedulers=4, l1_cycles=None):
    """issue.simulate's steady state, the passes counted on the oldest block's warps and an
    iteration as every warp's at the rate the SM issued."""
    sim = issue._Sim(body, warps_per_block, blocks, c, schedulers, l1_cycles)
    lead = [w for w in sim.warps if w.block == 0]
    half, finished, t = iterations // 2, {}, 0
    while len(finished) < iterations:
        counting = half in finished
        for s in range(schedulers):
            sim.cycle(s, t, counting)
        for i in range(1, iterations + 1):
            if i not in finished and all(w.iteration >= i for w in lead):
                finished[i] = t + 1
        t += 1
    span = finished[iterations] - finished[half]
    return issue.LoopResult(cycles_per_iteration=span * len(body) * len(sim.warps) / max(1, sim.issued),
                            issue_pct=100.0 * sim.issued / (span * schedulers), instructions_per_iteration=len(body),
                            warps=len(sim.warps), stalls={}, pipe_busy={})


def main() -> int:
    mode, POLICY[0] = sys.argv[1], sys.argv[2]
    issue._Sim.cycle = cycle
    base = issue.FITTED["NVIDIA H200"]
    if mode == "pace":
        for spec in sys.argv[3].split(","):
            kid, blocks = spec.split(":")
            (body, cycles), launch, _ = registered(kid, fit.MAIN, "sm_90")
            warps = -(-(launch.compute_threads or launch.threads) // 32)
            sim = paces(body, cycles, warps, int(blocks), base)
            print(f"{kid} at {blocks} a SM, {POLICY[0]}: cycles a trip by age {' '.join(f'{x:.0f}' for x in sim)}",
                  flush=True)
        return 0
    if POLICY[0] != "lrr":
        issue.simulate = simulate
    if mode == "residency":
        from study.predict.__main__ import DEFAULT_GPU
        from study.rundata.gpu import GPU

        gpu, loaded = GPU.from_json(DEFAULT_GPU), {}
        for r in (json.loads(line) for line in open(sys.argv[3])):
            if "residency" not in r:
                continue
            kid = r["kernel"]
            if kid not in loaded:
                loaded[kid] = registered(kid, fit.MAIN, "sm_90")
            (body, cycles), launch, _ = loaded[kid]
            launch = dataclasses.replace(launch, smem=r["static_smem"] + r["dynamic_smem"])
            p = model.predict(body, launch, fit.MAIN, gpu, "sm_90", c=base, l1_cycles=cycles)
            print(f"{kid} at {r['residency']} a SM, {POLICY[0]}: measured {r['ms']:.3f} ms, predicted {p['ms']:.3f} "
                  f"({100 * (p['ms'] / r['ms'] - 1):+.1f}%)", flush=True)
        return 0
    run, gpu, timed, configs, _ = fit.read_run(sys.argv[3])
    loaded, _ = fit.compile_all(timed, "sm_90", functools.partial(registered, sms=gpu.sms), configs)
    kids = [k for k in timed if k in loaded and k not in fit.LEFT_OUT]
    out = []
    for ldg, mio, bar in itertools.product((600, 800, 1000), (8, 16), (20, 60)):
        c = dataclasses.replace(base, ldg_latency=ldg, mio_queue=mio, barrier_latency=bar)
        errs = {}
        for kid in kids:
            body, cycles, launch = loaded[kid]
            errs[kid] = model.predict(body, launch, fit.MAIN, gpu, "sm_90", c=c, l1_cycles=cycles)["ms"] / timed[kid]
        obj = 100 * float(np.mean([abs(np.log(v)) for v in errs.values()]))
        worst = sorted(errs, key=lambda k: -abs(np.log(errs[k])))[:3]
        out.append((obj, ldg, mio, bar, ", ".join(f"{k} {100 * (errs[k] - 1):+.1f}%" for k in worst)))
        print(f"{POLICY[0]}: ldg_latency {ldg}, mio_queue {mio}, barrier_latency {bar}: {obj:.2f}% ({out[-1][4]})",
              flush=True)
    best = min(out)
    print(f"best, {POLICY[0]}: {best[0]:.2f}% at ldg_latency {best[1]}, mio_queue {best[2]}, barrier_latency {best[3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
