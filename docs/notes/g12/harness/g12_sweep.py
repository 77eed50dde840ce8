"""G12 copy-schedule sweep on the GPU: each variant checked against float64, timed at 4096^3; the best
two then at 2048^3 / 8192^3 and odd shapes, three rounds at 4096^3 beside K12 and cuBLAS."""
import sys, json, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from study.measure import bench, baseline
from study.measure.sweep_cuda import Cubin
sys.path.insert(0, str(Path(__file__).resolve().parent))
import g12_parts as g  # the schedule in parts, as the tree held it for this sweep
baseline.pin_fp32()
flush = bench.L2Flush(torch.cuda.get_device_properties(0).L2_cache_size)
out = open(sys.argv[1], "a")
def emit(**row):
    print(json.dumps(row), file=out, flush=True); print(row, flush=True)
kc = Cubin(Path("docs/notes/g12/harness/cubins/K12_255.cubin"), "k12_lean_issue")
def k12(a, b, o): kc.launcher(a, b, o, (b.shape[1] // 256, a.shape[0] // 128), 256, 98304)()
def k0(a, b, o): torch.matmul(a, b, out=o)
def gv(cfg):
    def f(a, b, o):
        g.A_PARTS, g.B_PARTS, g.A_LANES_K, g.AHEAD = cfg
        g.matmul(a, b, o)
    return f
def timeit(name, f, shape, rnd, target=0.2):
    M, N, K = shape
    err = bench.check(f, M, N, K, seed=rnd)
    a, b = bench.random_inputs(M, N, K, seed=10 + rnd); c = torch.empty(M, N, device="cuda")
    t = bench.time_cuda(lambda: f(a, b, c), flush, target_s=target)
    emit(kernel=name, M=M, N=N, K=K, round=rnd, err=err, ms=t.ms, p20=t.p20_ms, p80=t.p80_ms, reps=t.reps)
    return t.ms
cfgs = [(1, 1, 4, True), (2, 2, 4, True), (4, 4, 4, True), (4, 4, 2, True), (4, 4, 1, True), (2, 2, 2, True),
        (4, 4, 4, False), (8, 8, 2, True), (2, 2, 1, True)]
S = (4096,) * 3
timeit("K12", k12, S, 0); timeit("K0", k0, S, 0)
res = {}
for cfg in cfgs:
    t0 = time.time()
    try:
        res[cfg] = timeit("G12" + str(cfg), gv(cfg), S, 0)
    except Exception as e:
        emit(kernel="G12" + str(cfg), error=str(e)[:300])
    print("  took", round(time.time() - t0, 1), "s", flush=True)
best = sorted(res, key=res.get)[:2]
for cfg in best:
    for shape in [(33, 68, 20), (300, 260, 36), (4097, 4095, 4099)]:
        M, N, K = shape
        emit(kernel="G12" + str(cfg), M=M, N=N, K=K, err=bench.check(gv(cfg), M, N, K, seed=5))
for rnd in range(1, 4):
    for name, f in [("K12", k12), ("K0", k0)] + [("G12" + str(c), gv(c)) for c in best + [cfgs[0]]]:
        timeit(name, f, S, rnd, 0.3)
for shape in [(2048,) * 3, (8192,) * 3]:
    for name, f in [("K12", k12), ("K0", k0)] + [("G12" + str(c), gv(c)) for c in best + [cfgs[0]]]:
        timeit(name, f, shape, 0, 0.3)
json.dump([list(c) for c in best], open(sys.argv[1] + ".best", "w"))
