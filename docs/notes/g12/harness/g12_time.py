"""Time K12, K15, G12 (AHEAD True / False) and the K12 builds at 4096^3 (and 2048^3, 8192^3 for the G12 pair),
three rounds in rotating order, each checked first against float64; one CSV line per timing."""
import sys, json
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from study import kernels
from study.measure import bench, baseline
from study.measure.sweep_cuda import Cubin
from triton_kernels import g12_gluon
baseline.pin_fp32()
flush = bench.L2Flush(torch.cuda.get_device_properties(0).L2_cache_size)
out = open(sys.argv[1], "a")
def reg(kid, ahead=None):
    k = kernels.get(kid)
    def f(a, b, c):
        if ahead is not None: g12_gluon.AHEAD = ahead
        k.launcher(a, b, c)
    return f
import importlib.util
_spec = importlib.util.spec_from_file_location("g12_old", str(Path(__file__).with_name("g12_old.py")))
g12_old = importlib.util.module_from_spec(_spec); _spec.loader.exec_module(g12_old)
def cub(name):
    c = Cubin(Path(f"docs/notes/g12/harness/cubins/{name}.cubin"), "k12_lean_issue")
    return lambda a, b, o: c.launcher(a, b, o, (b.shape[1] // 256, a.shape[0] // 128), 256, 98304)()
variants = {"K12": reg("K12"), "K15": reg("K15"), "G12_ahead": reg("G12", True), "G12_plain": reg("G12", False),
            "K0": reg("K0"), "G12_old": lambda a, b, c: g12_old.matmul(a, b, c), "K12_255": cub("K12_255"), "K12_232": cub("K12_232")}
shapes = [(4096,)*3, (2048,)*3, (8192,)*3]
for rnd in range(3):
    for shape in shapes:
        M, N, K = shape
        a, b = bench.random_inputs(M, N, K, seed=rnd)
        names = list(variants)
        names = names[rnd % len(names):] + names[:rnd % len(names)]
        for n in names:
            if shape != (4096,)*3 and n.startswith("K12_"): continue
            f = variants[n]
            err = bench.check(lambda x, y, z: f(x, y, z), M, N, K, seed=rnd)
            c = torch.empty(M, N, device="cuda")
            t = bench.time_cuda(lambda: f(a, b, c), flush, target_s=0.3 if M < 8192 else 0.6)
            row = dict(round=rnd, kernel=n, M=M, N=N, K=K, err=err, ms=t.ms, p20=t.p20_ms, p80=t.p80_ms, reps=t.reps)
            print(json.dumps(row), file=out, flush=True); print(row, flush=True)
