"""Check and time the k15_slabs probe beside K12, K15 and G15 at 4096^3; with --profile, launch it
once more inside a profiler range (for ncu --profile-from-start off)."""
import json, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from study import kernels
from study.measure import bench, baseline
from study.measure.sweep_cuda import Cubin

baseline.pin_fp32()
torch.zeros(1, device="cuda")  # the CUDA context, before the driver API loads the cubin
cub = Cubin(Path(sys.argv[1]), "k15_slabs")
SMEM = 6 * 16384  # K12_SMEM_BYTES at the defaults: 4 stage strides + 2 of alignment slack


def slabs(a, b, c):
    M, N = a.shape[0], b.shape[1]
    cub.launcher(a, b, c, ((N + 255) // 256, (M + 127) // 128), 256, SMEM)()
    return c


if "--profile" in sys.argv:
    a, b = bench.random_inputs(4096, 4096, 4096, seed=3)
    c = bench.poisoned(4096, 4096)
    slabs(a, b, c); torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart(); slabs(a, b, c); torch.cuda.synchronize(); torch.cuda.cudart().cudaProfilerStop()
    sys.exit(0)

out = open(sys.argv[2], "a")
def emit(row):
    row["t"] = time.time(); out.write(json.dumps(row) + "\n"); out.flush(); print(json.dumps(row), flush=True)

for shape in ((4096, 4096, 4096), (130, 260, 36), (257, 516, 1028), (1, 4, 4), (64, 8, 20)):
    emit(dict(kid="k15_slabs", shape=shape, check=bench.check(slabs, *shape, seed=sum(shape))))
launch = {"K12": kernels.get("K12").launcher, "K15": kernels.get("K15").launcher,
          "G15": kernels.get("G15").launcher, "k15_slabs": slabs}
flush = bench.L2Flush(60 * 2**20)
a, b = bench.random_inputs(4096, 4096, 4096, 1)
c = torch.empty(4096, 4096, device="cuda")
kids = list(launch)
for p in range(3):
    for kid in kids[p:] + kids[:p]:
        t = bench.time_cuda(lambda: launch[kid](a, b, c), flush, target_s=0.25)
        emit(dict(kid=kid, shape=[4096] * 3, p=p, ms=t.ms, p20=t.p20_ms, p80=t.p80_ms, reps=t.reps))
