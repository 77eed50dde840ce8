"""Launch one cubin of the K12 tile at 4096^3 once (checked), then once inside a profiler range."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from study.measure.sweep_cuda import Cubin
from study.measure import bench, baseline
baseline.pin_fp32()
cub, sym, smem = sys.argv[1], sys.argv[2], int(sys.argv[3])
M = N = K = 4096
a, b = bench.random_inputs(M, N, K, seed=3)
c = bench.poisoned(M, N)
k = Cubin(Path(cub), sym)
f = k.launcher(a, b, c, (N // 256, M // 128), 256, smem)
f(); torch.cuda.synchronize()
ref = a.double() @ b.double()
print("rel err", bench.relative_error(c, ref))
torch.cuda.cudart().cudaProfilerStart(); f(); torch.cuda.synchronize(); torch.cuda.cudart().cudaProfilerStop()
