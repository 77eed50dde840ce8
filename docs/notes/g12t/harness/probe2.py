"""G12T with 16-byte copies (VEC = 4) and B's copy at several k-steps, beside K12, K15, G12 and
G12T with 4-byte copies; tl.dot on a transposed A (the product alone and with the transposition).
Each kernel checked against float64 with a NaN-poisoned output first; CUDA events, L2 flushed by a
read, passes in rotating order.

    python docs/notes/g12t/harness/probe2.py OUT.jsonl     # from the repository root
"""
import json
import statistics
import sys
import time

import torch

from study import kernels as registry
from study.measure import baseline, bench
from triton_kernels import g12t_gluon as g12t
from triton_kernels.tile import launch_tiled

out_path = sys.argv[1]
baseline.pin_fp32()


def emit(row):
    row["t"] = round(time.time(), 2)
    with open(out_path, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)


def variant(bstep, vec):
    def launch(a, b, out):
        g12t.B_STEP, g12t.VEC, g12t.INDEXED = bstep, vec, False  # named stages, as it ran
        return g12t.matmul(a, b, out)
    return launch


def dot_on_at(cfg):
    def launch(a, b, out):
        return launch_tiled(g12t.transpose(a).t(), b, out, *cfg, group_m=8)
    return launch


DOT = ((128, 128, 32, 8, 3), (128, 128, 32, 8, 4), (256, 64, 32, 8, 3), (128, 128, 64, 8, 2),
       (64, 256, 32, 8, 3), (128, 64, 32, 4, 4), (128, 256, 32, 8, 2), (256, 128, 16, 8, 3))
launchers = {k: registry.get(k).launcher for k in ("K12", "K15", "G12")}
# TA's configuration in the committed run at 4096^3, on row-major A
launchers["TA_256x64x32_w8_s3"] = lambda a, b, out: launch_tiled(a, b, out, 256, 64, 32, 8, 3, group_m=8)
for bstep, vec in ((8, 1), (8, 4), (4, 4), (6, 4), (10, 4), (12, 4), (2, 4)):
    launchers[f"G12T_b{bstep}_v{vec}"] = variant(bstep, vec)
for cfg in DOT:
    launchers["TAT_{}x{}x{}_w{}_s{}".format(*cfg)] = dot_on_at(cfg)

SMALL = ((4, 4, 4), (132, 260, 36), (256, 516, 1028), (64, 8, 20), (130, 262, 36), (1, 4, 4))
ok = {}
for kid, launch in launchers.items():
    try:
        errs = {"4096": bench.check(launch, 4096, 4096, 4096)}
        if kid.startswith(("G12T", "TAT")):
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


def time_parts(shape, passes):
    """The transposition alone and G12T's product alone on a ready At (16-byte copies, B at 8)."""
    M, N, K = shape
    a, b = bench.random_inputs(M, N, K, 1)
    at = g12t.transpose(a)
    out = torch.empty(M, N, device="cuda")
    from triton_kernels import g12_gluon as g12
    from triton_kernels import gluon_common as gc

    def product():
        gc.launch(g12.g12_kernel, at.t(), b, out, name="G12T", why=None, multiple_of=(1, 1, 1),
                  tile=(g12.BM, g12.BN, g12.BK), num_warps=8, A_LANES_K=1, B_STEP=8, AHEAD=True,
                  VEC=4)
    for p in range(passes):
        parts = {"transpose_gluon": lambda: g12t.transpose(a, at), "product_on_At_v4": product}
        for name, f in parts.items():
            t = bench.time_cuda(f, flush, target_s=0.2)
            emit(dict(kid=name, shape=shape, p=p, ms=t.ms, p20=t.p20_ms, p80=t.p80_ms, reps=t.reps))


kids = list(ok)
time_all((4096, 4096, 4096), kids, 3)
time_parts((4096, 4096, 4096), 3)
rows = [json.loads(line) for line in open(out_path) if '"ms"' in line]
med = {k: statistics.median(r["ms"] for r in rows if r["kid"] == k and r["shape"][0] == 4096) for k in kids}
g = sorted((v, k) for k, v in med.items() if k.startswith("G12T"))[:2]
t = sorted((v, k) for k, v in med.items() if k.startswith("TAT"))[:2]
best = [k for _, k in g + t]
emit(dict(summary=med, best=best))
for shape in ((2048, 2048, 2048), (8192, 8192, 8192)):
    time_all(shape, ["K12", "K15", "G12", "TA_256x64x32_w8_s3"] + best, 2,
             target_s=0.25 if shape[0] < 8192 else 0.5)
    time_parts(shape, 2)
