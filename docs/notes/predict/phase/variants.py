"""Every kernel of study.predict.fit's declared set at 4096³ under the constants fitted for the H200
and under variants of them, beside the run's times: each kernel's error, the mean |log error| and
the ladder's steps and some twins' ratios.

    python docs/notes/predict/phase/variants.py RUN_DIR FIELD=VALUE[,FIELD=VALUE...] ...

No GPU (nvcc, cuobjdump, the Triton the run timed)."""
import dataclasses
import functools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path.cwd()))
from study.predict import fit, issue, model  # noqa: E402
from study.predict.__main__ import registered  # noqa: E402

STEPS = [("K3", "K2"), ("K3c", "K3"), ("K4", "K3c"), ("K5", "K4"), ("K6", "K5"), ("K7", "K6"), ("K8", "K7"),
         ("K9", "K8"), ("K10", "K9"), ("K11", "K10"), ("K12", "K11"), ("K13", "K12"), ("K14", "K13"), ("K15", "K14"),
         ("T3", "K3"), ("T3p", "K3"), ("T4", "K4"), ("T5", "K5"), ("T5p", "K5"), ("G6", "K5")]


def main() -> int:
    run, gpu, timed, configs, _ = fit.read_run(sys.argv[1])
    loaded, _ = fit.compile_all(timed, "sm_90", functools.partial(registered, sms=gpu.sms), configs)
    base = issue.constants_for(gpu.name)
    variants = {"fitted": base}
    for spec in sys.argv[2:]:
        kv = dict(x.split("=") for x in spec.split(","))
        variants[spec] = dataclasses.replace(base, **{k: int(v) if v.lstrip("-").isdigit() else v
                                                      for k, v in kv.items()})
    kids = [k for k in timed if k in loaded]
    ms = {name: {} for name in variants}
    for kid in kids:
        body, cycles, launch = loaded[kid]
        cells = []
        for name, c in variants.items():
            ms[name][kid] = model.predict(body, launch, fit.MAIN, gpu, "sm_90", c=c, l1_cycles=cycles)["ms"]
            cells.append(f"{100 * (ms[name][kid] / timed[kid] - 1):+6.1f}%")
        print(f"{kid:5} " + "  ".join(cells), flush=True)
    for name in variants:
        kept = [k for k in kids if k not in fit.LEFT_OUT]
        obj = 100 * float(np.mean([abs(np.log(ms[name][k] / timed[k])) for k in kept]))
        steps = [f"{a}/{b} {100 * ((ms[name][b] / ms[name][a]) / (timed[b] / timed[a]) - 1):+.1f}%"
                 for a, b in STEPS if a in ms[name] and b in ms[name]]
        print(f"{name}: mean |log error| {obj:.2f}% over the declared set; steps " + ", ".join(steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
