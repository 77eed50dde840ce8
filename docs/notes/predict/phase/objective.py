"""The fit's grid scored three ways: study.predict.fit's objective (the mean |log error| of the
declared set's kernels at 4096³), the same over the ladder's steps and the twins' ratios as
``--check`` states them (study.predict.check.summary), and the mean of the two. Every candidate
is played once per kernel, as the fit plays it (its forked workers, its loop cache).

    python docs/notes/predict/phase/objective.py RUN_DIR OUT.jsonl

One JSON line per candidate into OUT.jsonl (its fields, the three scores, the steps and ratios
outside ±5%, the kernels outside ±10%), then the best by each score. No GPU (nvcc, cuobjdump, the
Triton the run timed)."""
import dataclasses
import functools
import itertools
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path.cwd()))
from study.predict import check, fit, issue, model  # noqa: E402
from study.predict.__main__ import registered  # noqa: E402

GRID = {
    "ldg_latency": (600, 800, 1000),
    "mio_queue": (8, 16, 32),
    "lds_latency": (30, 22),
    "barrier_latency": (20, 60),
    "lg_queue": (8, 16),
}


def main() -> int:
    run, gpu, timed, configs, _ = fit.read_run(sys.argv[1])
    loaded, _ = fit.compile_all(timed, "sm_90", functools.partial(registered, sms=gpu.sms), configs)
    kids = [k for k in timed if k in loaded and k not in fit.LEFT_OUT]
    base = issue.constants_for(gpu.name)
    cands = [dataclasses.replace(base, **dict(zip(GRID, vals))) for vals in itertools.product(*GRID.values())]
    loops: dict = {}

    def column(j: int) -> list:
        out = []
        for k in kids:
            body, cycles, launch = loaded[k]
            out.append(model.predict(body, launch, fit.MAIN, gpu, "sm_90", c=cands[j], l1_cycles=cycles,
                                     loops=loops)["ms"])
        return out

    table = {0: column(0)}
    for j, col in fit.columns(column, len(cands)):
        table[j] = col
    scored = []
    with open(sys.argv[2], "w") as f:
        for j, c in enumerate(cands):
            rows = [{"kernel": k, "shape": list(fit.MAIN), "ms": ms, "measured_ms": timed[k],
                     "error_pct": 100 * (ms / timed[k] - 1)} for k, ms in zip(kids, table[j])]
            ratios = [r for r in check.summary(rows) if r.get("summary") in ("step", "twin")]
            kern = float(np.mean([abs(np.log(r["ms"] / r["measured_ms"])) for r in rows]))
            rat = float(np.mean([abs(np.log(r["predicted"] / r["measured"])) for r in ratios]))
            rec = {**{f: getattr(c, f) for f in GRID}, "kernels": 100 * kern, "ratios": 100 * rat,
                   "both": 100 * (kern + rat) / 2,
                   "steps_outside_5": [f"{r['a']}/{r['b']}" for r in ratios
                                       if r["summary"] == "step" and abs(r["error_pct"]) > 5],
                   "twins_outside_5": sum(1 for r in ratios if r["summary"] == "twin" and abs(r["error_pct"]) > 5),
                   "kernels_outside_10": [r["kernel"] for r in rows if abs(r["error_pct"]) > 10]}
            scored.append(rec)
            f.write(json.dumps(rec) + "\n")
    for key in ("kernels", "ratios", "both"):
        b = min(scored, key=lambda r: r[key])
        print(f"best by {key}: " + ", ".join(f"{f} {b[f]}" for f in GRID)
              + f"; kernels {b['kernels']:.2f}%, ratios {b['ratios']:.2f}%; steps outside ±5%: "
              + f"{len(b['steps_outside_5'])} ({', '.join(b['steps_outside_5'])}); twins outside ±5%: "
              + f"{b['twins_outside_5']}; kernels outside ±10%: {', '.join(b['kernels_outside_10']) or 'none'}")
    return 0


if __name__ == "__main__":  # the columns are played in forked workers
    sys.exit(main())
