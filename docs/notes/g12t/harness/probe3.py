"""G12T and G12 with one phase a loop iteration (stages indexed by its parity: INDEXED) beside the
two-phase loop, K12, K15: each checked against float64 with a NaN-poisoned output (at 4096^3 and
at small shapes of 1, 2 and 3 phases), then timed with CUDA events (L2 flushed by a read), passes
in rotating order.

    python docs/notes/g12t/harness/probe3.py OUT.jsonl     # from the repository root
"""
import json
import statistics
import sys
import time

import torch

from study import kernels as registry
from study.measure import baseline, bench
from triton_kernels import g12_gluon as g12
from triton_kernels import g12t_gluon as g12t

out_path = sys.argv[1]
baseline.pin_fp32()


def emit(row):
    row["t"] = round(time.time(), 2)
    with open(out_path, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)


def t_variant(bstep, vec, indexed):
    def launch(a, b, out):
        g12t.B_STEP, g12t.VEC, g12t.INDEXED = bstep, vec, indexed
        return g12t.matmul(a, b, out)
    return launch


def g_variant(indexed):
    def launch(a, b, out):
        g12.INDEXED = indexed
        return g12.matmul(a, b, out)
    return launch


launchers = {k: registry.get(k).launcher for k in ("K12", "K15")}
launchers["G12"] = g_variant(False)
launchers["G12_idx"] = g_variant(True)
launchers["G12T_v4_b4"] = t_variant(4, 4, False)
launchers["G12T_v4_idx"] = t_variant(8, 4, True)
launchers["G12T_v1_idx"] = t_variant(8, 1, True)

SMALL = ((4, 4, 4), (132, 260, 36), (256, 516, 1028), (64, 8, 20), (130, 262, 36), (1, 4, 4),
         (128, 256, 16), (128, 256, 32), (200, 300, 17), (8, 12, 48))
ok = {}
for kid, launch in launchers.items():
    try:
        errs = {"4096": bench.check(launch, 4096, 4096, 4096)}
        if kid.startswith("G"):
            errs.update({"x".join(map(str, s)): bench.check(launch, *s, seed=sum(s)) for s in SMALL})
    except Exception as e:  # a variant that does not build is a row, not the end of the probe
        emit(dict(kid=kid, error=repr(e)[:400]))
        continue
    good = all(e <= bench.TOLERANCE for e in errs.values())
    emit(dict(kid=kid, check=errs, ok=good))
    if good:
        ok[kid] = launch

flush = bench.L2Flush(torch.cuda.get_device_properties(0).L2_cache_size)


def time_all(shape, kids, passes, target_s=0.25):
    M, N, K = shape
    a, b = bench.random_inputs(M, N, K, 1)
    out = torch.empty(M, N, device="cuda")
    for p in range(passes):
        order = kids[p % len(kids):] + kids[:p % len(kids)]
        for kid in order:
            t = bench.time_cuda(lambda kid=kid: ok[kid](a, b, out), flush, target_s=target_s)
            emit(dict(kid=kid, shape=shape, p=p, ms=t.ms, p20=t.p20_ms, p80=t.p80_ms, reps=t.reps))


kids = list(ok)
time_all((4096, 4096, 4096), kids, 3)
for shape in ((2048, 2048, 2048), (8192, 8192, 8192)):
    time_all(shape, kids, 2, target_s=0.25 if shape[0] < 8192 else 0.5)
rows = [json.loads(line) for line in open(out_path) if '"ms"' in line]
med = {(k, s): statistics.median(r["ms"] for r in rows if r["kid"] == k and r["shape"][0] == s)
       for k in kids for s in (2048, 4096, 8192)}
emit(dict(summary={f"{k}@{s}": round(med["K12", s] / v, 4) for (k, s), v in med.items()}))
