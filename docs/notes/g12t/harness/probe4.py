"""G12T under register caps (the compile's maxnreg) beside K12: each checked against float64 with a
NaN-poisoned output, then timed with CUDA events (L2 flushed by a read), passes in rotating order.

    python docs/notes/g12t/harness/probe4.py OUT.jsonl     # from the repository root
"""
import json
import statistics
import sys
import time

import torch

from study import kernels as registry
from study.measure import baseline, bench
from triton_kernels import g12t_gluon as g12t

out_path = sys.argv[1]
baseline.pin_fp32()


def emit(row):
    row["t"] = round(time.time(), 2)
    with open(out_path, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)


def capped(cap):
    def launch(a, b, out):
        g12t.MAXNREG = cap
        return g12t.matmul(a, b, out)
    return launch


launchers = {"K12": registry.get("K12").launcher}
for cap in (None, 224, 232, 240, 248):
    launchers[f"G12T_cap{cap}"] = capped(cap)
ok = {}
for kid, launch in launchers.items():
    errs = {"4096": bench.check(launch, 4096, 4096, 4096)}
    if kid != "K12":
        errs.update({"x".join(map(str, s)): bench.check(launch, *s, seed=sum(s))
                     for s in ((1, 4, 4), (130, 262, 36), (256, 516, 1028))})
    good = all(e <= bench.TOLERANCE for e in errs.values())
    emit(dict(kid=kid, check=errs, ok=good))
    if good:
        ok[kid] = launch
flush = bench.L2Flush(torch.cuda.get_device_properties(0).L2_cache_size)
for shape, passes in (((4096, 4096, 4096), 3), ((2048, 2048, 2048), 2), ((8192, 8192, 8192), 2)):
    M, N, K = shape
    a, b = bench.random_inputs(M, N, K, 1)
    out = torch.empty(M, N, device="cuda")
    kids = list(ok)
    for p in range(passes):
        for kid in kids[p % len(kids):] + kids[:p % len(kids)]:
            t = bench.time_cuda(lambda kid=kid, a=a, b=b, out=out: ok[kid](a, b, out), flush,
                                target_s=0.25 if M < 8192 else 0.5)
            emit(dict(kid=kid, shape=shape, p=p, ms=t.ms, p20=t.p20_ms, p80=t.p80_ms, reps=t.reps))
rows = [json.loads(line) for line in open(out_path) if '"ms"' in line]
med = {(r["kid"], r["shape"][0]): statistics.median(x["ms"] for x in rows
                                                     if x["kid"] == r["kid"] and x["shape"] == r["shape"])
       for r in rows}
emit(dict(summary={f"{k}@{s}": round(med["K12", s] / v, 4) for (k, s), v in med.items()}))
