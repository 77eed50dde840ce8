import sys, importlib.util
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch
from study.measure import bench, baseline
baseline.pin_fp32()
spec = importlib.util.spec_from_file_location("g12_old", str(Path(__file__).with_name("g12_old.py")))
g = importlib.util.module_from_spec(spec); spec.loader.exec_module(g)
M = N = K = 4096
a, b = bench.random_inputs(M, N, K, seed=3); c = torch.empty(M, N, device="cuda")
g.matmul(a, b, c); g.matmul(a, b, c); torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart(); g.matmul(a, b, c); torch.cuda.synchronize(); torch.cuda.cudart().cudaProfilerStop()
