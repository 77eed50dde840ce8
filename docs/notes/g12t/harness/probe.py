"""G12T variants beside K12, K15, G12 and G15 on the H200: each checked against float64 with a
NaN-poisoned output, then timed with CUDA events (L2 flushed by a read), passes in rotating order.

    python docs/notes/g12t/harness/probe.py OUT.jsonl     # from the repository root
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


def variant(bstep, lanes, ahead=True):
    def launch(a, b, out):
        g12t.B_STEP, g12t.A_LANES_K, g12t.AHEAD = bstep, lanes, ahead
        g12t.VEC, g12t.INDEXED = 1, False  # as it ran: 4-byte copies, named stages (added later)
        return g12t.matmul(a, b, out)
    return launch


launchers = {k: registry.get(k).launcher for k in ("K12", "K15", "G12", "G15")}
for bstep, lanes, ahead in ((8, 1, True), (0, 1, True), (4, 1, True), (12, 1, True), (8, 2, True),
                            (8, 1, False), (4, 1, False)):
    launchers[f"G12T_b{bstep}_l{lanes}{'' if ahead else '_plain'}"] = variant(bstep, lanes, ahead)

SMALL = ((1, 4, 4), (130, 260, 36), (257, 516, 1028), (64, 8, 20))
ok = {}
for kid, launch in launchers.items():
    try:
        errs = {"4096": bench.check(launch, 4096, 4096, 4096)}
        if kid.startswith("G12T"):
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


def time_parts(shape, passes=3):
    """The transposition alone (Gluon; torch's copy) and G12T's product alone on a ready At."""
    M, N, K = shape
    a, b = bench.random_inputs(M, N, K, 1)
    at = torch.empty(K, M, device="cuda")
    out = torch.empty(M, N, device="cuda")
    g12t.B_STEP, g12t.A_LANES_K, g12t.AHEAD = 8, 1, True
    g12t.VEC, g12t.INDEXED = 1, False
    g12t.transpose(a, at)
    assert torch.equal(at, a.t()), "transpose_kernel"
    opts = {**g12t._options(), "VEC": 1}
    from triton_kernels import g12_gluon as g12
    from triton_kernels import gluon_common as gc

    def product():
        gc.launch(g12.g12_kernel, at.t(), b, out, name="G12T", why=None, multiple_of=(1, 1, 1),
                  tile=(g12.BM, g12.BN, g12.BK), num_warps=8, **opts)
    parts = {"transpose_gluon": lambda: g12t.transpose(a, at),
             "transpose_torch": lambda: at.copy_(a.t()),
             "product_on_At": product}
    for p in range(passes):
        for name, f in parts.items():
            t = bench.time_cuda(f, flush, target_s=0.2)
            emit(dict(kid=name, shape=shape, p=p, ms=t.ms, p20=t.p20_ms, p80=t.p80_ms, reps=t.reps))


kids = list(ok)
time_all((4096, 4096, 4096), kids, 3)
time_parts((4096, 4096, 4096))
rows = [json.loads(line) for line in open(out_path) if '"ms"' in line]
med = {k: statistics.median(r["ms"] for r in rows if r["kid"] == k and r["shape"][0] == 4096)
       for k in kids}
best = [k for _, k in sorted((v, k) for k, v in med.items() if k.startswith("G12T"))[:2]]
emit(dict(summary=med, best=best))
for shape in ((2048, 2048, 2048), (8192, 8192, 8192)):
    time_all(shape, ["K12", "K15", "G12"] + best, 2, target_s=0.25 if shape[0] < 8192 else 0.5)
    time_parts(shape, 2)

# tl.dot (tiled_matmul_kernel, FP32 "ieee") on row-major A and on At.T, the product alone
from triton_kernels.tile import launch_tiled  # noqa: E402

DOT = ((256, 64, 32, 8, 3), (128, 128, 32, 8, 3), (128, 256, 16, 8, 2), (128, 64, 32, 4, 3),
       (64, 128, 32, 4, 3), (128, 128, 16, 8, 4), (64, 64, 32, 4, 3))
M = N = K = 4096
a, b = bench.random_inputs(M, N, K, 1)
at_view = a.t().contiguous().t()
out = torch.empty(M, N, device="cuda")
ref = (a.double() @ b.double())
dots = {}
for cfg in DOT:
    bm, bn, bk, nw, ns = cfg
    for src, av in (("A", a), ("At", at_view)):
        name = f"dot_{bm}x{bn}x{bk}_w{nw}_s{ns}_{src}"
        try:
            out.fill_(float("nan"))
            launch_tiled(av, b, out, bm, bn, bk, nw, ns, group_m=8)
            torch.cuda.synchronize()
            err = float(((out.double() - ref).norm() / ref.norm()).item())
        except Exception as e:
            emit(dict(kid=name, error=repr(e)[:300]))
            continue
        emit(dict(kid=name, check={"4096": err}, ok=err <= bench.TOLERANCE))
        if err <= bench.TOLERANCE:
            dots[name] = (lambda av=av, c=cfg: launch_tiled(av, b, out, *c, group_m=8))
for p in range(2):
    for name, f in dots.items():
        t = bench.time_cuda(f, flush, target_s=0.2)
        emit(dict(kid=name, shape=[M, N, K], p=p, ms=t.ms, p20=t.p20_ms, p80=t.p80_ms, reps=t.reps))
