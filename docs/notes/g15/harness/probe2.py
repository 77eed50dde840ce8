"""G15 copy schedules (B in parts, one allocation per part): checked, timed at 4096^3 beside K12 and G15."""
import importlib.util, json, sys, time, os, statistics
import torch
from study.measure import bench
from study import kernels as registry

out_path = sys.argv[1]
torch.backends.cuda.matmul.allow_tf32 = False
here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("v_parts", os.path.join(here, "v_parts.py"))
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)

def emit(row):
    row["t"] = time.time()
    with open(out_path, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)

launchers = {kid: registry.get(kid).launcher for kid in ("K12", "G15")}
SCHEDULES = [(0, (8,)), (0, (4, 10)), (0, (6, 10)), (0, (8, 12)), (0, (6, 12)), (4, (0, 8)), (0, (2, 6, 10, 13)),
             (0, (4, 7, 10, 13)), (0, (6, 8, 10, 12)), (0, (8, 10, 12, 14)), (0, (1, 3, 5, 7)), (2, (6, 8, 10, 12)),
             (12, (0, 4)), (8, (0, 4))]
def make(a_step, b_steps):
    def launch(a, b, out):
        mod.A_STEP, mod.B_STEPS = a_step, b_steps
        return mod.matmul(a, b, out)
    return launch
for a_step, b_steps in SCHEDULES:
    launchers[f"a{a_step}_b{'-'.join(map(str, b_steps))}"] = make(a_step, b_steps)

ok = {}
for kid, launch in launchers.items():
    errs = {}
    try:
        for shape in ((4096, 4096, 4096), (1, 4, 4), (130, 260, 36), (257, 516, 1028), (64, 8, 20)):
            if kid in ("K12", "G15") and shape != (4096, 4096, 4096):
                continue
            errs["x".join(map(str, shape))] = bench.check(launch, *shape)
    except Exception as e:
        emit(dict(kid=kid, error=repr(e)[:300])); continue
    good = all(e < 1e-5 for e in errs.values())
    emit(dict(kid=kid, check=errs, ok=good))
    if good:
        ok[kid] = launch

flush = bench.L2Flush(60 * 2**20)
def time_all(shape, kids, passes):
    M, N, K = shape
    a, b = bench.random_inputs(M, N, K, 1)
    out = torch.empty(M, N, device="cuda")
    for p in range(passes):
        order = kids[p % len(kids):] + kids[:p % len(kids)]
        for kid in order:
            t = bench.time_cuda(lambda: ok[kid](a, b, out), flush, target_s=0.2)
            emit(dict(kid=kid, shape=shape, p=p, ms=t.ms, p20=t.p20_ms, p80=t.p80_ms, reps=t.reps))

kids = list(ok)
time_all((4096, 4096, 4096), kids, 2)
rows = [json.loads(l) for l in open(out_path) if '"ms"' in l]
med = {k: statistics.median(r["ms"] for r in rows if r["kid"] == k) for k in kids}
best = [k for _, k in sorted((v, k) for k, v in med.items() if k not in ("K12", "G15"))[:2]]
emit(dict(summary=med, best=best))
for shape in ((2048, 2048, 2048), (8192, 8192, 8192)):
    time_all(shape, ["K12", "G15"] + best, passes=2)
