"""One G12T (or G12, K12) launch at 4096^3 inside the profiler's range, for ncu's per-instruction
counters: python docs/notes/g12t/harness/child.py KIND (G12T: the module's defaults; else a
registered kernel id)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch  # noqa: E402

from study import kernels  # noqa: E402
from study.measure import baseline, bench  # noqa: E402
from triton_kernels import g12t_gluon  # noqa: E402

kind = sys.argv[1]
if len(sys.argv) > 2:  # G12T with another copy width
    g12t_gluon.VEC = int(sys.argv[2])
if len(sys.argv) > 3:  # and named stages (0) or indexed (1)
    g12t_gluon.INDEXED = sys.argv[3] == "1"
launch = g12t_gluon.matmul if kind == "G12T" else kernels.get(kind).launcher
baseline.pin_fp32()
M = N = K = 4096
err = bench.check(launch, M, N, K, seed=7)
assert err <= bench.TOLERANCE, err
a, b = bench.random_inputs(M, N, K, seed=1)
out = torch.empty(M, N, device="cuda")
for _ in range(2):
    launch(a, b, out)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
launch(a, b, out)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
