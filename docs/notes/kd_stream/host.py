"""Host cost of one operator call, taken apart: the distribution of host_seconds (the panel's
figure) for the call and its parts, interleaved, many times. Usage: python host.py OUTJSONL"""
import json, os, sys, time, statistics
import torch
sys.path.insert(0, os.getcwd())
import cuda_kernels, sgemm_ledgers
from study.measure import decode as dec

ext = cuda_kernels.load()
sgemm_ledgers.configure()
torch.backends.cuda.matmul.allow_tf32 = False
f = open(sys.argv[1], "a")
for (M, N, K) in ((1, 4096, 4096), (2, 14336, 4096), (32, 10240, 8192), (1, 152064, 3584), (4096, 4096, 4096)):
    a = torch.randn(M, K, device="cuda"); b = torch.randn(K, N, device="cuda"); out = torch.empty(M, N, device="cuda")
    bad = torch.empty(M + 1, N, device="cuda")
    calls = {
        "op": lambda: sgemm_ledgers.mm(a, b, out=out),
        "op_new": lambda: sgemm_ledgers.mm(a, b),
        "eager": lambda: ext.mm_eager(a, b, out),
        "refused": lambda: ext.mm_eager(a, b, bad),  # checks only: no launch
        "route": lambda: ext.mm_route(a, b, out),
        "dispatcher": lambda: torch.ops.sgemm_ledgers.mm.out(a, b, out=out),
        "torch_mm": lambda: torch.mm(a, b, out=out),
        "is_compiling": lambda: torch.compiler.is_compiling(),
    }
    for c in calls.values():
        c()
    torch.cuda.synchronize()
    for rep in range(12):
        for name, c in calls.items():
            h = dec.host_seconds(c)
            f.write(json.dumps(dict(M=M, N=N, K=K, call=name, rep=rep, host_us=None if h is None else h * 1e6)) + "\n")
    f.flush()
    print("host", M, N, K, "done", flush=True)
