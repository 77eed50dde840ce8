"""G15 variants against K12, K15, G12 at 4096^3 (then 2048^3, 8192^3 for the best): checked, timed."""
import importlib.util, json, sys, time, os
import torch
from study.measure import bench
from study import kernels as registry

out_path = sys.argv[1]
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
here = os.path.dirname(os.path.abspath(__file__))

def load(name):
    spec = importlib.util.spec_from_file_location(f"g15_{name}", os.path.join(here, f"{name}.py"))
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m

def emit(row):
    row["t"] = time.time()
    with open(out_path, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)

launchers = {kid: registry.get(kid).launcher for kid in ("K12", "K15", "G12")}
mods = {n: load(n) for n in ("v_plain", "v_ahead")}
variants = [("v_plain", 8), ("v_ahead", 8), ("v_ahead", 4), ("v_ahead", 12), ("v_ahead", 0)]

def g15(mod, bstep):
    def launch(a, b, out):
        mod.B_STEP = bstep
        return mod.matmul(a, b, out)
    return launch

for mname, bstep in variants:
    launchers[f"{mname}_b{bstep}"] = g15(mods[mname], bstep)

ok = {}
for kid, launch in launchers.items():
    errs = {}
    try:
        for shape in ((4096, 4096, 4096), (1, 4, 4), (130, 260, 36), (257, 516, 1028), (64, 8, 20)):
            if kid.startswith(("K12", "K15", "G12")) and shape != (4096, 4096, 4096):
                continue
            t0 = time.time()
            errs["x".join(map(str, shape))] = bench.check(launch, *shape)
    except Exception as e:
        emit(dict(kid=kid, error=repr(e)[:300])); continue
    good = all(e < 1e-5 for e in errs.values())
    emit(dict(kid=kid, check=errs, ok=good))
    if good:
        ok[kid] = launch

flush = bench.L2Flush(60 * 2**20)
def time_all(shape, kids, passes=3):
    M, N, K = shape
    a, b = bench.random_inputs(M, N, K, 1)
    out = torch.empty(M, N, device="cuda")
    for p in range(passes):
        order = kids[p % len(kids):] + kids[:p % len(kids)]
        for kid in order:
            t = bench.time_cuda(lambda: ok[kid](a, b, out), flush, target_s=0.25)
            emit(dict(kid=kid, shape=shape, p=p, ms=t.ms, p20=t.p20_ms, p80=t.p80_ms, reps=t.reps))

kids = list(ok)
time_all((4096, 4096, 4096), kids)
import statistics
rows = [json.loads(l) for l in open(out_path) if '"ms"' in l]
med = {k: statistics.median(r["ms"] for r in rows if r["kid"] == k) for k in kids}
g = sorted((v, k) for k, v in med.items() if not k.startswith(("K12", "K15", "G12")))
best = [k for _, k in g[:2]]
emit(dict(summary=med, best=best))
for shape in ((2048, 2048, 2048), (8192, 8192, 8192)):
    time_all(shape, ["K12", "K15", "G12"] + best, passes=2)
