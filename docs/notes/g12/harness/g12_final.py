"""The kept G12 against K12 (its cubin) and cuBLAS: 3 rounds at 4096^3, one at 2048^3 and 8192^3."""
import sys, json
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from study.measure import bench, baseline
from study.measure.sweep_cuda import Cubin
from triton_kernels import g12_gluon as g
baseline.pin_fp32()
flush = bench.L2Flush(torch.cuda.get_device_properties(0).L2_cache_size)
out = open(sys.argv[1], "a")
kc = Cubin(Path("docs/notes/g12/harness/cubins/K12_255.cubin"), "k12_lean_issue")
def k12(a, b, o): kc.launcher(a, b, o, (b.shape[1] // 256, a.shape[0] // 128), 256, 98304)()
def k0(a, b, o): torch.matmul(a, b, out=o)
def g12(a, b, o): g.matmul(a, b, o)
for rnd, shape in [(0, (4096,) * 3), (1, (4096,) * 3), (2, (4096,) * 3), (0, (2048,) * 3), (0, (8192,) * 3)]:
    M, N, K = shape
    for name, f in [("K12", k12), ("K0", k0), ("G12", g12)][rnd:] + [("K12", k12), ("K0", k0), ("G12", g12)][:rnd]:
        err = bench.check(f, M, N, K, seed=rnd)
        a, b = bench.random_inputs(M, N, K, seed=10 + rnd); c = torch.empty(M, N, device="cuda")
        t = bench.time_cuda(lambda: f(a, b, c), flush, target_s=0.3)
        row = dict(kernel=name, M=M, N=N, K=K, round=rnd, err=err, ms=t.ms, p20=t.p20_ms, p80=t.p80_ms, reps=t.reps)
        print(json.dumps(row), file=out, flush=True); print(row, flush=True)
