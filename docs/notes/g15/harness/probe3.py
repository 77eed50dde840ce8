"""G15 with A's copies 8 lanes to a 128-byte line, beside its first copy map, K12, K15, G12."""
import importlib.util, json, sys, time, os, statistics
import torch
from study.measure import bench
from study import kernels as registry
import triton_kernels.g15_gluon as g15

out_path = sys.argv[1]
torch.backends.cuda.matmul.allow_tf32 = False
here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("v_ahead", os.path.join(here, "v_ahead.py"))
old = importlib.util.module_from_spec(spec); spec.loader.exec_module(old)

def emit(row):
    row["t"] = time.time()
    with open(out_path, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)

launchers = {kid: registry.get(kid).launcher for kid in ("K12", "K15", "G12", "G15")}
def make(mod, b_step):
    def launch(a, b, out):
        mod.B_STEP = b_step
        try:
            return mod.matmul(a, b, out)
        finally:
            mod.B_STEP = 8
    return launch
for s in (4, 6, 10, 12):
    launchers[f"G15_b{s}"] = make(g15, s)
launchers["G15_oldmap"] = make(old, 8)

ok = {}
for kid, launch in launchers.items():
    errs = {}
    try:
        for shape in ((4096, 4096, 4096), (1, 4, 4), (130, 260, 36), (257, 516, 1028), (64, 8, 20)):
            if kid in ("K12", "K15", "G12") and shape != (4096, 4096, 4096):
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
            t = bench.time_cuda(lambda: ok[kid](a, b, out), flush, target_s=0.25)
            emit(dict(kid=kid, shape=shape, p=p, ms=t.ms, p20=t.p20_ms, p80=t.p80_ms, reps=t.reps))

time_all((4096, 4096, 4096), list(ok), 3)
for shape in ((2048, 2048, 2048), (8192, 8192, 8192)):
    time_all(shape, [k for k in ("K12", "K15", "G12", "G15") if k in ok], passes=2)
