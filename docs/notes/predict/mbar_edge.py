"""The fitted set's objective around the mbarrier test's fitted latency, past the grid's last
value. Only the kernels whose main loop tests an mbarrier (SYNCS) move with mbar_latency; every
other field is held at the H200's fitted set (study.predict.issue.FITTED). Prints, for each value,
each such kernel's error against the committed run at 4096^3 and the sum of their |log| errors,
the part of the fit's objective that moves.

    python docs/notes/predict/mbar_edge.py reports"""
import math
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from study.predict import check, issue, model  # noqa: E402
from study.predict.__main__ import registered  # noqa: E402
from study.predict.fit import read_run  # noqa: E402

_, gpu, times, _, _ = read_run(sys.argv[1])
base = issue.constants_for(gpu.name)
shape = check.MAIN
loops = {}
for kid in ("K13", "K14", "KD"):
    (body, cycles), launch, _ = registered(kid, shape, "sm_90", sms=gpu.sms)
    assert any(i.base == "SYNCS" for i in body), kid
    loops[kid] = (body, cycles, launch)
for lat in (250, 400, 500, 600, 750):
    c = replace(base, mbar_latency=lat)
    errs = {}
    for kid, (body, cycles, launch) in loops.items():
        ms = model.predict(body, launch, shape, gpu, c=c, l1_cycles=cycles)["ms"]
        errs[kid] = ms / times[kid]
    total = sum(abs(math.log(r)) for r in errs.values())
    print(f"mbar_latency {lat}: " + ", ".join(f"{k} {100 * (r - 1):+.1f}%" for k, r in errs.items())
          + f"; sum of |log| {total:.4f}")
